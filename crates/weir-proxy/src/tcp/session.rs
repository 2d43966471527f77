//! One TCP session: pick an endpoint (the next one on connect failure), then
//! relay until both sides are done, the session idles out, or the drain grace
//! of a removed listener or a shutdown ends it.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::pool::PoolRt;
use crate::reason::Reason;
use crate::tcp::relay::relay;
use crate::upstream::connect::connect;

pub async fn serve(
    client: TcpStream,
    listener: Arc<str>,
    pool: Arc<PoolRt>,
    idle_timeout: Duration,
    kill: CancellationToken,
) {
    let peer = client.peer_addr().ok();
    let Some(upstream) = connect_any(&listener, &pool).await else {
        warn!(
            listener = &*listener,
            pool = &*pool.name,
            reason = Reason::ConnectFailed.as_str(),
            client = ?peer,
            "tcp session refused: no endpoint accepted the connection"
        );
        return;
    };
    let _ = client.set_nodelay(true);
    tokio::select! {
        r = relay(client, upstream, idle_timeout) => {
            if let Err(e) = r {
                debug!(listener = &*listener, "tcp session ended: {e}");
            }
        }
        _ = kill.cancelled() => debug!(listener = &*listener, "tcp session cut at drain grace"),
    }
}

/// Tries each endpoint at most once, starting at the balancer's pick.
async fn connect_any(listener: &str, pool: &PoolRt) -> Option<TcpStream> {
    let n = pool.endpoints.len();
    let start = pool.balancer.pick()?;
    for k in 0..n {
        let ep = &pool.endpoints[(start + k) % n];
        match connect(ep.addr, pool.connect_timeout).await {
            Ok(s) => return Some(s),
            Err(e) => warn!(
                listener,
                pool = &*pool.name,
                endpoint = &*ep.addr_str,
                reason = Reason::ConnectFailed.as_str(),
                "tcp connect failed, trying the next endpoint: {e}"
            ),
        }
    }
    None
}
