//! End-to-end tests: the real `weir` binary against fake upstreams on loopback.

mod api_client;
mod common;
mod scripted;
mod tls_kit;

mod api;
mod api_live;
mod api_safety;
mod api_token_guessing;

mod accept;
mod accesslog;
mod acks;
mod auth_basic;
mod auth_forward;
mod balance;
mod capacity;
mod check;
mod cli;
mod client_addr;
mod client_identity;
mod compress;
mod ctl;
mod demo;
mod dns;
mod draining;
mod duplicates;
mod ejection;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "etcd")]
mod etcd_failover;
#[cfg(feature = "etcd")]
mod etcd_invalid;
#[cfg(feature = "etcd")]
mod etcd_secure;
mod expect;
mod filters;
mod grpc;
mod grpc_answers;
mod h2_early_answer;
mod h2_tunnel;
mod health;
mod http2;
mod http_basic;
mod http_body;
mod http_errors;
mod http_framing;
mod idle_close_race;
mod input_bounds;
mod memory;
mod observability;
mod path_normalization;
mod proxy_protocol;
mod proxy_protocol_interop;
mod proxy_protocol_tlvs;
mod release;
mod reload;
mod request_timeout;
mod resilience;
mod retries;
mod routing;
mod shutdown;
mod sni;
mod stats_errors;
mod tcp;
mod tcp_tls;
mod timeouts;
mod tls;
mod tls_api;
mod tls_bad_input;
mod tls_config;
mod tls_stats;
mod truncation;
mod upstream_h2;
mod upstream_h2_goaway;
mod upstream_h2_interop;
mod upstream_h2_limits;
mod upstream_h2_ping;
mod upstream_tls;
mod websocket;

mod filters_cors;
mod filters_error_pages;
