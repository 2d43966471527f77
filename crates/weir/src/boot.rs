//! What `weir run` and `weir demo` both start: the data plane, the control plane on the
//! given source (which applies the first config), the endpoint sources, lease expiry, and the
//! admin listener.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use weir_admin::api::Auth;
use weir_control::{EndpointSource, RunningConfig, Source, StartError};
use weir_proxy::Proxy;

pub struct Running {
    pub proxy: Arc<Proxy>,
    pub control: Arc<RunningConfig>,
    /// Cancel to stop the admin listener.
    pub stop_admin: CancellationToken,
}

/// Why weir could not start; each command says it its own way.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error(transparent)]
    Start(#[from] StartError),
    #[error("cannot listen on {addr}: {source}")]
    Admin {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Starts everything; call after the signal handlers are installed (a signal that finds
/// none ends the process).
pub async fn start(
    source: Arc<dyn Source>,
    admin: SocketAddr,
    auth: Auth,
) -> Result<Running, BootError> {
    let proxy = Proxy::new();
    let control = RunningConfig::start(proxy.clone(), source)?;
    control.discover(endpoint_sources());
    tokio::spawn(control.clone().expire_leases());
    let listener = weir_admin::bind(admin)
        .await
        .map_err(|source| BootError::Admin {
            addr: admin,
            source,
        })?;
    let stop_admin = CancellationToken::new();
    let served = Arc::new(weir_admin::Admin {
        proxy: proxy.clone(),
        control: control.clone(),
        auth,
    });
    tokio::spawn(weir_admin::serve(listener, served, stop_admin.clone()));
    Ok(Running {
        proxy,
        control,
        stop_admin,
    })
}

/// Where pools' endpoints may come from besides the config (the discovery seam,
/// `weir_control::discovery`): one entry per endpoint source. Kubernetes EndpointSlices
/// will take a line here.
fn endpoint_sources() -> Vec<Arc<dyn EndpointSource>> {
    vec![Arc::new(weir_dns::Dns::default())]
}
