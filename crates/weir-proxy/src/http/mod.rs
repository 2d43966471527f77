//! The HTTP/1.1 reverse proxy: client connections, request forwarding, and
//! the pieces they need (headers, bodies, generated errors, client timeouts).

pub mod body;
pub mod client_body;
pub mod conn;
pub mod conn_state;
pub mod error;
pub mod forward;
pub mod headers;
pub mod tries;
pub mod upbody;
