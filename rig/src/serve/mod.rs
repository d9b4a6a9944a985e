//! `sinkhole serve [RESULTS_DIR]`: a results browser over HTTP, like
//! Jepsen's `serve` (`jepsen.web`): the runs newest first with their modes'
//! outcomes, each run's report.html and files, the matrices, and a diff of
//! two runs of one scenario ([`pages`]). No script; the reports are the
//! self-contained pages `sinkhole run` writes.
//!
//! The URL space is the results directory itself (`/<run-id>/report.html`),
//! so the relative links of matrix.html work as they do from disk; `/` is the
//! index and `/-/diff?a=RUN&b=RUN` the diff. Every path is confined to the
//! directory ([`confine`]): no `..` or hidden segment, and a symlink is
//! followed only when its target lies inside the directory too. Loopback only
//! by default (`--bind` widens it; the results name hosts, paths and seeds).
//! HTTP/1.1 by hyper, one task per connection, a header read timeout against
//! connections that never finish a request; only GET and HEAD.
mod discover;
pub(crate) mod pages;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use sinkhole_base::rundir::RunDir;
use tokio::io::AsyncRead;

pub use discover::{discover, Found, MatrixEntry, RunEntry};

type Body = BoxBody<Bytes, std::io::Error>;

/// Why a path is not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not there (404).
    NotFound,
    /// Outside the results directory, or a `..` / hidden segment (403).
    Forbidden,
    /// Not a path at all: bad percent-encoding, not UTF-8 (400).
    BadRequest,
}

/// Decodes `%XX` escapes; None when one is malformed or the result is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The file or directory a URL path names inside `root` (canonical, as
/// `std::fs::canonicalize` gives it), or why not. `root` must be canonical.
pub fn confine(root: &Path, url_path: &str) -> Result<PathBuf, Refusal> {
    let decoded = percent_decode(url_path).ok_or(Refusal::BadRequest)?;
    let mut p = root.to_path_buf();
    for seg in decoded.split('/').filter(|s| !s.is_empty()) {
        // `..`, `.` and hidden names, and what a platform could read as a separator.
        if seg.starts_with('.') || seg.contains('\\') || seg.contains('\0') {
            return Err(Refusal::Forbidden);
        }
        let mut comps = Path::new(seg).components();
        if !matches!((comps.next(), comps.next()), (Some(Component::Normal(_)), None)) {
            return Err(Refusal::Forbidden);
        }
        p.push(seg);
    }
    let real = std::fs::canonicalize(&p).map_err(|_| Refusal::NotFound)?;
    // A symlink inside the directory may point anywhere: what counts is where it lands.
    if real.starts_with(root) {
        Ok(real)
    } else {
        Err(Refusal::Forbidden)
    }
}

/// The `Content-Type` of a file the results hold.
pub fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "json" => "application/json",
        "xml" => "application/xml; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "css" => "text/css; charset=utf-8",
        // Shown in the browser rather than downloaded.
        "jsonl" | "yaml" | "yml" | "log" | "txt" | "hlog" | "md" | "properties" | "sh" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// What a request gets back (before HEAD drops the body).
enum Reply {
    Page(StatusCode, String),
    File(PathBuf),
    Redirect(String),
}

/// A file's bytes as a body, read in chunks, never more than its length when opened.
struct FileBody {
    file: tokio::fs::File,
    left: u64,
    buf: Vec<u8>,
}

impl hyper::body::Body for FileBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        if this.left == 0 {
            return Poll::Ready(None);
        }
        let want = this.buf.len().min(usize::try_from(this.left).unwrap_or(usize::MAX));
        let mut rb = tokio::io::ReadBuf::new(&mut this.buf[..want]);
        match Pin::new(&mut this.file).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) if rb.filled().is_empty() => Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file shrank while it was served",
            )))),
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                this.left -= n as u64;
                Poll::Ready(Some(Ok(Frame::data(Bytes::copy_from_slice(rb.filled())))))
            }
        }
    }
}

fn full(text: String) -> Body {
    Full::new(Bytes::from(text)).map_err(|never: Infallible| match never {}).boxed()
}

fn empty() -> Body {
    full(String::new())
}

/// No script, nothing fetched from elsewhere: the pages need inline CSS and
/// SVG and links within the directory.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; script-src 'none'";

async fn respond(root: Arc<PathBuf>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let head = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head {
        let mut r = Response::new(full("only GET and HEAD\n".into()));
        *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        r.headers_mut().insert("allow", HeaderValue::from_static("GET, HEAD"));
        return Ok(r);
    }
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let reply = tokio::task::spawn_blocking(move || route(&root, &path, &query))
        .await
        .unwrap_or_else(|e| Reply::Page(StatusCode::INTERNAL_SERVER_ERROR, pages::message("error", &e.to_string())));
    let mut r = match reply {
        Reply::Page(status, html) => {
            let len = html.len();
            let mut r = Response::new(if head { empty() } else { full(html) });
            *r.status_mut() = status;
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
            r.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(len));
            r
        }
        Reply::Redirect(to) => {
            let mut r = Response::new(empty());
            *r.status_mut() = StatusCode::MOVED_PERMANENTLY;
            if let Ok(v) = HeaderValue::from_str(&to) {
                r.headers_mut().insert(LOCATION, v);
            }
            r
        }
        Reply::File(p) => match tokio::fs::File::open(&p).await {
            Ok(file) => {
                let len = file.metadata().await.map(|m| m.len()).unwrap_or(0);
                let body = if head { empty() } else { FileBody { file, left: len, buf: vec![0; 64 * 1024] }.boxed() };
                let mut r = Response::new(body);
                r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type(&p)));
                r.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(len));
                r
            }
            Err(e) => {
                let mut r = Response::new(full(pages::message("not readable", &e.to_string())));
                *r.status_mut() = StatusCode::FORBIDDEN;
                r
            }
        },
    };
    let h = r.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    Ok(r)
}

fn route(root: &Path, path: &str, query: &str) -> Reply {
    match path {
        "/" => return Reply::Page(StatusCode::OK, pages::index(root, &discover(root))),
        "/-/diff" => {
            let arg = |k: &str| {
                query
                    .split('&')
                    .filter_map(|kv| kv.split_once('='))
                    .find(|(key, _)| *key == k)
                    .and_then(|(_, v)| percent_decode(&v.replace('+', " ")))
            };
            return match (arg("a"), arg("b")) {
                (Some(a), Some(b)) => match (run_dir(root, &a), run_dir(root, &b)) {
                    (Ok(da), Ok(db)) => Reply::Page(StatusCode::OK, pages::diff(root, &da, &db)),
                    (Err(r), _) | (_, Err(r)) => refused(r, "a run to compare"),
                },
                _ => Reply::Page(
                    StatusCode::BAD_REQUEST,
                    pages::message(
                        "diff",
                        "name two runs: /-/diff?a=RUN_DIR&b=RUN_DIR (paths as the index links them)",
                    ),
                ),
            };
        }
        _ => {}
    }
    let real = match confine(root, path) {
        Ok(p) => p,
        Err(r) => return refused(r, path),
    };
    if real.is_dir() {
        if !path.ends_with('/') {
            // Relative links inside the directory's pages need the slash.
            return Reply::Redirect(format!("{path}/"));
        }
        return Reply::Page(StatusCode::OK, pages::listing(root, &real));
    }
    Reply::File(real)
}

fn run_dir(root: &Path, rel: &str) -> Result<PathBuf, Refusal> {
    let d = confine(root, rel)?;
    if RunDir::at(&d).has_summary() {
        Ok(d)
    } else {
        Err(Refusal::NotFound)
    }
}

fn refused(r: Refusal, what: &str) -> Reply {
    let (status, why) = match r {
        Refusal::NotFound => (StatusCode::NOT_FOUND, "no such file in the results directory"),
        Refusal::Forbidden => (StatusCode::FORBIDDEN, "outside the results directory, or hidden"),
        Refusal::BadRequest => (StatusCode::BAD_REQUEST, "not a valid path"),
    };
    Reply::Page(status, pages::message(status.as_str(), &format!("{what}: {why}")))
}

/// Serves `dir` on `addr` until the process ends; `ready` is told the
/// address actually bound (with port 0, the port chosen) before the first
/// connection is accepted.
pub async fn serve(dir: &Path, addr: SocketAddr, ready: impl FnOnce(SocketAddr)) -> anyhow::Result<()> {
    let root = std::fs::canonicalize(dir).with_context(|| format!("{}: no such results directory", dir.display()))?;
    if !root.is_dir() {
        anyhow::bail!("{}: not a directory", dir.display());
    }
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening on {addr}"))?;
    ready(listener.local_addr()?);
    let root = Arc::new(root);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(c) => c,
            // Out of descriptors, a connection reset before accept: the server goes on.
            Err(e) => {
                tracing::warn!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let root = root.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| respond(root.clone(), req));
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!("connection: {e}");
            }
        });
    }
}

#[cfg(test)]
mod tests;
