//! RFC 9457 problem details: every API error names its kind, says what went wrong, and, for
//! invalid changes, the field.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use serde::Serialize;
use weir_control::{FieldError, Refused};
use weir_store::StoreError;

/// Boxed: it travels in every `Result` of the API, and most of those are `Ok`.
#[derive(Debug)]
pub struct Problem(Box<Body>);

#[derive(Debug, Serialize)]
struct Body {
    #[serde(rename = "type")]
    kind: String,
    title: &'static str,
    status: u16,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<FieldError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    current_version: Option<u64>,
    /// The index of the failing change in a transaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    change: Option<usize>,
    #[serde(skip)]
    allow: Option<&'static str>,
    /// Seconds, for a `Retry-After` header.
    #[serde(skip)]
    retry_after: Option<u64>,
}

impl Problem {
    pub fn new(
        status: StatusCode,
        slug: &str,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Problem {
        Problem(Box::new(Body {
            kind: format!("urn:weir:problem:{slug}"),
            title,
            status: status.as_u16(),
            detail: detail.into(),
            field: None,
            errors: Vec::new(),
            current_version: None,
            change: None,
            allow: None,
            retry_after: None,
        }))
    }

    pub fn bad_request(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-request",
            "bad request",
            detail,
        )
    }

    pub fn not_found(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::NOT_FOUND, "not-found", "not found", detail)
    }

    pub fn method_not_allowed(allow: &'static str) -> Problem {
        let mut p = Problem::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method-not-allowed",
            "method not allowed",
            format!("this resource allows {allow}"),
        );
        p.0.allow = Some(allow);
        p
    }

    pub fn precondition_required(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::PRECONDITION_REQUIRED,
            "precondition-required",
            "a precondition is required",
            detail,
        )
    }

    pub fn precondition_failed(detail: impl Into<String>, current: Option<u64>) -> Problem {
        let mut p = Problem::new(
            StatusCode::PRECONDITION_FAILED,
            "precondition-failed",
            "precondition failed",
            detail,
        );
        p.0.current_version = current;
        p
    }

    /// A field-level problem with the request itself (422).
    pub fn invalid(field: String, message: String) -> Problem {
        Problem::from_errors(vec![FieldError {
            field: Some(field),
            message,
        }])
    }

    fn from_errors(errors: Vec<FieldError>) -> Problem {
        let detail = errors
            .iter()
            .map(|e| match &e.field {
                Some(f) => format!("{f}: {}", e.message),
                None => e.message.clone(),
            })
            .collect::<Vec<_>>()
            .join("; ");
        let mut p = Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-config",
            "the change makes the configuration invalid",
            detail,
        );
        p.0.field = errors.iter().find_map(|e| e.field.clone());
        p.0.errors = errors;
        p
    }

    /// Names the field the problem is about.
    pub fn with_field(mut self, field: String) -> Problem {
        self.0.field = Some(field);
        self
    }

    #[cfg(test)]
    pub fn field(&self) -> Option<&str> {
        self.0.field.as_deref()
    }

    /// Says when to try again (`Retry-After`, in seconds).
    pub fn retry_after(mut self, secs: u64) -> Problem {
        self.0.retry_after = Some(secs);
        self
    }

    pub fn at_change(mut self, index: Option<usize>) -> Problem {
        self.0.change = index;
        self
    }

    pub fn into_response(self) -> Response<Full<Bytes>> {
        let p = self.0;
        let body = serde_json::to_vec(&p).unwrap_or_default();
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() =
            StatusCode::from_u16(p.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(allow) = p.allow {
            h.insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        if let Some(secs) = p.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if p.status == 401 {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"weir\""),
            );
        }
        r
    }
}

/// The answer to a refused change. `single` is false for transactions, whose problems name
/// the failing change.
pub fn refused(e: Refused, single: bool) -> Problem {
    let at = |i: usize| if single { None } else { Some(i) };
    match e {
        Refused::NotFound { index } => {
            Problem::not_found("the resource does not exist").at_change(at(index))
        }
        Refused::AlreadyExists { index, current } => Problem::precondition_failed(
            format!("the resource already exists (If-None-Match: *), at version {current}"),
            Some(current),
        )
        .at_change(at(index)),
        Refused::Stale { index, current } => Problem::precondition_failed(
            format!("the resource was changed meanwhile: its version is {current}; read it again"),
            Some(current),
        )
        .at_change(at(index)),
        Refused::Invalid(i) => Problem::from_errors(i.0),
        e @ Refused::FileMode(_) => Problem::new(
            StatusCode::CONFLICT,
            "file-mode",
            "the config comes from a file",
            e.to_string(),
        ),
        e @ Refused::FileDefined { .. } => Problem::new(
            StatusCode::CONFLICT,
            "file-mode",
            "the config comes from a file",
            e.to_string(),
        ),
        Refused::Store(e @ StoreError::Unreachable { .. }) => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store-unreachable",
            "the config store is unreachable; nothing was changed",
            e.to_string(),
        ),
        Refused::Store(e @ StoreError::Undecided { .. }) => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store-unreachable",
            "the config store is unreachable; the change may have been applied",
            e.to_string(),
        ),
        Refused::Store(e) => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store",
            "the config store failed",
            e.to_string(),
        ),
    }
}
