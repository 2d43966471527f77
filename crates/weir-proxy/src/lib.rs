//! weir-proxy
