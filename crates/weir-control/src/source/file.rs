//! File mode: the file is the source of truth for listeners, routes and pools; endpoints
//! registered through the API are kept beside it (in memory) and merged in.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tracing::warn;
use weir_store::{Change, Kind, State, Versioned};

use super::{Check, Commit, Initial, Outside, Source};
use crate::checked::Checked;
use crate::from_toml::specs;
use crate::refused::Refused;
use crate::start_error::StartError;

pub struct FileSource {
    /// None for an embedded config (the demo), which is never re-read.
    path: Option<PathBuf>,
    name: String,
    /// `[admin]` as first read; changing it needs a restart.
    admin: weir_config::Admin,
    now: Mutex<Now>,
    /// The file's resources as last re-read, until that state is applied.
    pending: Mutex<Option<State>>,
}

/// What the file holds now, and what the API added.
struct Now {
    /// The file's resources, with the revision that last changed each.
    file: State,
    /// Endpoints added through the API.
    overlay: BTreeMap<(Kind, String), Versioned>,
    preamble: String,
}

impl FileSource {
    /// Reads (at most 16 MiB) and validates the file; the error is the diagnostics (the
    /// first 100 and a count of the rest), ready to print.
    pub fn open(path: PathBuf) -> Result<FileSource, String> {
        let name = path.display().to_string();
        let text = weir_config::read_source(&path).map_err(|e| e.to_string())?;
        Self::build(Some(path), name, &text)
    }

    /// A config that is not a file on disk (the demo's).
    pub fn embedded(text: &str, name: &str) -> Result<FileSource, String> {
        Self::build(None, name.to_owned(), text)
    }

    fn build(path: Option<PathBuf>, name: String, text: &str) -> Result<FileSource, String> {
        let (file, preamble, config) = parse(text, &name, &State::default())?;
        Ok(FileSource {
            path,
            name,
            admin: config.admin,
            now: Mutex::new(Now {
                file,
                overlay: BTreeMap::new(),
                preamble,
            }),
            pending: Mutex::new(None),
        })
    }

    pub fn admin(&self) -> &weir_config::Admin {
        &self.admin
    }
}

impl Now {
    /// The file's resources plus the registered endpoints.
    fn merged(&self) -> State {
        let mut s = self.file.clone();
        s.resources
            .extend(self.overlay.iter().map(|(k, v)| (k.clone(), v.clone())));
        s
    }

    /// Keeps the endpoints of `merged` that the file does not define.
    fn set_overlay(&mut self, merged: &State) {
        self.overlay = merged
            .resources
            .iter()
            .filter(|((k, _), _)| *k == Kind::Endpoint)
            .filter(|(key, _)| !self.file.resources.contains_key(*key))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    }

    /// The endpoints written through the API change; the file's resources do not.
    fn set_overlay_from(&mut self, changes: &[Change], merged: &State) {
        for c in changes {
            let (Change::Put { kind, name, .. } | Change::Delete { kind, name, .. }) = c;
            let key = (*kind, name.clone());
            match merged.resources.get(&key) {
                Some(v) => self.overlay.insert(key, v.clone()),
                None => self.overlay.remove(&key),
            };
        }
    }
}

impl Source for FileSource {
    fn describe(&self) -> (&'static str, String) {
        ("file", self.name.clone())
    }

    fn initial(&self) -> Result<Initial, StartError> {
        let now = self.now.lock().unwrap();
        Ok(Initial {
            state: now.merged(),
            preamble: now.preamble.clone(),
        })
    }

    /// Only endpoints can be written in file mode, and only those the file does not define.
    fn accepts(&self, changes: &[Change]) -> Result<(), Refused> {
        let now = self.now.lock().unwrap();
        for c in changes {
            let (Change::Put { kind, name, .. } | Change::Delete { kind, name, .. }) = c;
            if *kind != Kind::Endpoint {
                return Err(Refused::FileMode(file_name(&self.path)));
            }
            if now.file.get(*kind, name).is_some() {
                return Err(Refused::FileDefined {
                    name: name.clone(),
                    file: self.name.clone(),
                });
            }
        }
        Ok(())
    }

    /// In memory: registrations live as long as the process.
    fn commit(
        &self,
        current: &Arc<State>,
        changes: Vec<Change>,
        check: Check<'_, Checked>,
    ) -> Result<Commit<Checked>, Refused> {
        let commit = super::commit_in_memory(current, changes.clone(), check)?;
        self.now
            .lock()
            .unwrap()
            .set_overlay_from(&changes, &commit.state);
        Ok(commit)
    }

    fn rereads(&self) -> bool {
        self.path.is_some()
    }

    /// Reads the file again. `Ok(None)` when nothing in it changed.
    fn reread(&self, current: &State) -> Result<Option<Outside>, String> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        // Bounded like the first read: a reload must not read /dev/zero to the end either.
        let text = weir_config::read_source(path).map_err(|e| e.to_string())?;
        let (file, preamble, _) = parse(&text, &self.name, current)?;
        let now = self.now.lock().unwrap();
        let same = |a: &State, b: &State| {
            a.resources.len() == b.resources.len()
                && a.resources
                    .iter()
                    .all(|(k, v)| b.resources.get(k).is_some_and(|w| w.body == v.body))
        };
        if same(&file, &now.file) && preamble == now.preamble {
            return Ok(None);
        }
        let mut merged = file.clone();
        for (key, v) in &now.overlay {
            let pool = key.1.split('/').next().unwrap_or_default();
            if merged.resources.contains_key(key) {
                warn!(
                    "registered endpoint {} is now defined in the file; the file's wins",
                    key.1
                );
            } else if merged.get(Kind::Pool, pool).is_none() {
                warn!(
                    "registered endpoint {} dropped: its pool is gone from the file",
                    key.1
                );
            } else {
                merged.resources.insert(key.clone(), v.clone());
            }
        }
        merged.revision = file.revision;
        let admin_changed = section(&preamble, "admin") != section(&now.preamble, "admin");
        drop(now);
        // The file's own resources are what a later re-read compares with.
        self.pending.lock().unwrap().replace(file);
        Ok(Some(Outside {
            state: merged,
            preamble,
            admin_changed,
        }))
    }

    /// Makes a re-read file current (after it was applied).
    fn accept(&self, outside: Outside) {
        let mut now = self.now.lock().unwrap();
        if let Some(file) = self.pending.lock().unwrap().take() {
            now.file = file;
        }
        now.preamble = outside.preamble;
        now.set_overlay(&outside.state);
    }
}

/// Validates `text` like `weir check`, then turns it into resources. A resource whose spec
/// is unchanged from `current` keeps its version; the others get the next revision.
fn parse(
    text: &str,
    name: &str,
    current: &State,
) -> Result<(State, String, weir_config::Config), String> {
    let loaded = weir_config::parse_file_text(text, name).map_err(|d| d.to_string())?;
    for w in &loaded.warnings {
        warn!("{w}");
    }
    if !loaded.omitted.is_empty() {
        warn!("{}", loaded.omitted);
    }
    let specs = specs(text).map_err(|e| format!("{name}: {e}"))?;
    let revision = current.revision + 1;
    let mut state = State {
        revision,
        ..State::default()
    };
    for (key, body) in specs {
        let version = match current.resources.get(&key) {
            Some(v) if *v.body == body => v.version,
            _ => revision,
        };
        state.resources.insert(
            key,
            Versioned {
                version,
                body: body.into(),
            },
        );
    }
    Ok((state, preamble(text), loaded.config))
}

/// The file's `[admin]` and `[global]` tables, as TOML.
fn preamble(text: &str) -> String {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return String::new();
    };
    let mut t = toml::Table::new();
    for k in ["admin", "global"] {
        if let Some(v) = doc.get(k) {
            t.insert(k.to_owned(), v.clone());
        }
    }
    toml::to_string(&t).unwrap_or_default()
}

fn section(preamble: &str, name: &str) -> Option<toml::Value> {
    preamble.parse::<toml::Table>().ok()?.get(name).cloned()
}

/// The path of a file source, for messages.
pub fn file_name(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map_or("<demo>".into(), |p| p.display().to_string())
}
