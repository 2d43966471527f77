//! Watching the config file. We watch its directory rather than the file:
//! editors and Kubernetes ConfigMaps replace files by rename, which a watch on
//! the old inode would miss.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::mpsc;

pub struct Watcher {
    _inner: Option<RecommendedWatcher>,
    /// Kept so a disabled watcher's channel stays open (and silent).
    _tx: Option<mpsc::Sender<()>>,
}

impl Watcher {
    /// Starts watching; each relevant change sends one `()` (coalesced).
    pub fn new(path: &Path) -> notify::Result<(Watcher, mpsc::Receiver<()>)> {
        let (tx, rx) = mpsc::channel(1);
        let keep = tx.clone();
        let file: PathBuf = path.file_name().map(PathBuf::from).unwrap_or_default();
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut inner = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            let Ok(ev) = ev else { return };
            if ev.kind.is_access() {
                return;
            }
            // ConfigMaps swap a `..data` symlink; accept any change in the
            // directory that touches our file name or a hidden swap entry.
            let relevant = ev.paths.iter().any(|p| {
                p.file_name()
                    .is_some_and(|n| Path::new(n) == file || n.to_string_lossy().starts_with(".."))
            });
            if relevant {
                let _ = tx.try_send(());
            }
        })?;
        inner.watch(&dir, RecursiveMode::NonRecursive)?;
        Ok((
            Watcher {
                _inner: Some(inner),
                _tx: Some(keep),
            },
            rx,
        ))
    }

    pub fn disabled() -> (Watcher, mpsc::Receiver<()>) {
        let (tx, rx) = mpsc::channel(1);
        let w = Watcher {
            _inner: None,
            _tx: Some(tx),
        };
        (w, rx)
    }

    /// Waits until changes stop for a moment, swallowing the burst.
    pub async fn settle(&mut self, rx: &mut mpsc::Receiver<()>) {
        while let Ok(Some(())) = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
        }
    }
}
