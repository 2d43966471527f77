//! Backends given by DNS name: an endpoint source (weir-control's `EndpointSource`) that
//! follows each pool's `HOST:PORT` and SRV names and sends the pool every address they have
//! now, asking again when each answer's TTL runs out. Its own crate so that the data plane
//! never links a resolver: it only ever sees addresses.

mod answer;
mod follow;
mod resolver;
mod shared;
mod source;
mod wanted;

pub use answer::lookup_now;
pub use source::Dns;
