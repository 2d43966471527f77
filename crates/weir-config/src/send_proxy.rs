//! Which PROXY protocol header weir sends a pool's endpoints (`send_proxy`). Its own file
//! because the model (model.rs) holds it and the reader (client_addr.rs) makes it.

/// `[pools.NAME] send_proxy`: the PROXY protocol version weir writes at the start of each
/// upstream connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendProxy {
    /// The text header, `PROXY TCP4 ...\r\n`.
    V1,
    /// The binary header.
    V2,
}
