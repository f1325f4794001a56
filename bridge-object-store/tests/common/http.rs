//! A loopback WebDAV subset for object_store's `HttpStore`: GET and HEAD (with `Range`),
//! PUT, DELETE, COPY (with `Destination` and `Overwrite: F`), MKCOL and PROPFIND (`Depth: 1`
//! and `infinity`). Objects live in a map from path to bytes; directories are implied by
//! the paths under them (MKCOL only says yes). It runs on a runtime of its own, with threads
//! named `http-server`, so that no request of the store under test is served by the runtime
//! that sends it.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use object_store::ClientOptions;
use object_store::http::{HttpBuilder, HttpStore};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Every object's last-modified time (a Tuesday, as RFC 1123 dates name the weekday).
const LAST_MODIFIED: &str = "Tue, 01 Dec 2026 00:00:00 GMT";

#[derive(Default)]
struct Objects {
    /// Path without the leading `/` -> (body, version for the ETag).
    map: BTreeMap<String, (Bytes, u64)>,
    versions: u64,
}

type Shared = Arc<Mutex<Objects>>;

/// The server; dropping it shuts its runtime down.
pub struct Server {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl Server {
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("http-server")
            .enable_all()
            .build()
            .expect("the server's runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the listener's address");
        let objects = Shared::default();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
            while let Ok((stream, _)) = listener.accept().await {
                let objects = Arc::clone(&objects);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        respond(request, Arc::clone(&objects))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            _runtime: runtime,
        }
    }

    /// object_store's HTTP store on this server.
    pub fn store(&self) -> HttpStore {
        HttpBuilder::new()
            .with_url(format!("http://{}", self.addr))
            .with_client_options(ClientOptions::new().with_allow_http(true))
            .build()
            .expect("an HttpStore")
    }
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}

fn key_of(path: &str) -> String {
    path.trim_start_matches('/')
        .trim_end_matches('/')
        .to_owned()
}

async fn respond(
    request: Request<Incoming>,
    objects: Shared,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let key = key_of(request.uri().path());
    let method = request.method().clone();
    let headers = request.headers().clone();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let response = match method.as_str() {
        "PUT" => {
            let body = request.into_body().collect().await?.to_bytes();
            let mut objects = objects.lock().unwrap();
            objects.versions += 1;
            let version = objects.versions;
            objects.map.insert(key, (body, version));
            with_etag(status(StatusCode::CREATED), version)
        }
        "GET" | "HEAD" => {
            let found = objects.lock().unwrap().map.get(&key).cloned();
            match found {
                None => status(StatusCode::NOT_FOUND),
                Some((body, version)) => {
                    get(&body, version, method == Method::GET, header("range"))
                }
            }
        }
        "DELETE" => match objects.lock().unwrap().map.remove(&key) {
            Some(_) => status(StatusCode::NO_CONTENT),
            None => status(StatusCode::NOT_FOUND),
        },
        "MKCOL" => status(StatusCode::CREATED),
        "COPY" => {
            let destination = header("destination").unwrap_or_default();
            let to = key_of(destination.split_once("://").map_or("", |(_, rest)| {
                rest.find('/').map_or("", |slash| &rest[slash..])
            }));
            let overwrite = header("overwrite").is_none_or(|v| v != "F");
            let mut objects = objects.lock().unwrap();
            match objects.map.get(&key).cloned() {
                None => status(StatusCode::NOT_FOUND),
                Some(_) if !overwrite && objects.map.contains_key(&to) => {
                    status(StatusCode::PRECONDITION_FAILED)
                }
                Some((body, _)) => {
                    objects.versions += 1;
                    let version = objects.versions;
                    objects.map.insert(to, (body, version));
                    status(StatusCode::CREATED)
                }
            }
        }
        "PROPFIND" => {
            let depth = header("depth").unwrap_or_else(|| "infinity".to_owned());
            propfind(&objects.lock().unwrap(), &key, &depth)
        }
        _ => status(StatusCode::METHOD_NOT_ALLOWED),
    };
    Ok(response)
}

fn with_etag(mut response: Response<Full<Bytes>>, version: u64) -> Response<Full<Bytes>> {
    let etag = HeaderValue::from_str(&format!("\"v{version}\"")).unwrap();
    response.headers_mut().insert(header::ETAG, etag);
    response
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n` of an object of `len` bytes, as a half-open range.
fn parse_range(range: &str, len: usize) -> Option<(usize, usize)> {
    let (first, last) = range.strip_prefix("bytes=")?.split_once('-')?;
    let (start, end) = match (first.parse::<usize>().ok(), last.parse::<usize>().ok()) {
        (Some(start), Some(last)) => (start, (last + 1).min(len)),
        (Some(start), None) => (start, len),
        (None, Some(suffix)) => (len.saturating_sub(suffix), len),
        (None, None) => return None,
    };
    (start < end).then_some((start, end))
}

fn get(
    body: &Bytes,
    version: u64,
    with_body: bool,
    range: Option<String>,
) -> Response<Full<Bytes>> {
    let (code, part) = match range {
        None => (StatusCode::OK, (0, body.len())),
        Some(range) => match parse_range(&range, body.len()) {
            Some(part) => (StatusCode::PARTIAL_CONTENT, part),
            None => return status(StatusCode::RANGE_NOT_SATISFIABLE),
        },
    };
    let sent = body.slice(part.0..part.1);
    let length = sent.len();
    let mut response = status(code);
    if with_body {
        *response.body_mut() = Full::new(sent);
    }
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert(
        header::LAST_MODIFIED,
        HeaderValue::from_static(LAST_MODIFIED),
    );
    if code == StatusCode::PARTIAL_CONTENT {
        let value = format!("bytes {}-{}/{}", part.0, part.1 - 1, body.len());
        headers.insert(
            header::CONTENT_RANGE,
            HeaderValue::from_str(&value).unwrap(),
        );
    }
    with_etag(response, version)
}

/// A multistatus listing of `key`: with depth 1 the collection itself, its objects and its
/// subcollections; otherwise every object under it. 404 when nothing is under it.
fn propfind(objects: &Objects, key: &str, depth: &str) -> Response<Full<Bytes>> {
    let prefix = if key.is_empty() {
        String::new()
    } else {
        format!("{key}/")
    };
    let under: Vec<(&String, &(Bytes, u64))> = objects
        .map
        .iter()
        .filter(|(path, _)| path.starts_with(&prefix))
        .collect();
    if under.is_empty() {
        return status(StatusCode::NOT_FOUND);
    }
    let mut xml =
        String::from(r#"<?xml version="1.0" encoding="utf-8"?><multistatus xmlns="DAV:">"#);
    let mut entry = |href: &str, object: Option<&(Bytes, u64)>| {
        let (length, kind, etag) = match object {
            Some((body, version)) => (
                format!("<getcontentlength>{}</getcontentlength>", body.len()),
                "<resourcetype/>".to_owned(),
                format!("<getetag>\"v{version}\"</getetag>"),
            ),
            None => (
                String::new(),
                "<resourcetype><collection/></resourcetype>".to_owned(),
                String::new(),
            ),
        };
        write!(
            xml,
            "<response><href>/{href}</href><propstat><prop><getlastmodified>{LAST_MODIFIED}</getlastmodified>{length}{kind}{etag}</prop><status>HTTP/1.1 200 OK</status></propstat></response>"
        )
        .unwrap();
    };
    if depth == "1" {
        entry(&prefix, None);
        let mut collections = std::collections::BTreeSet::new();
        for (path, object) in &under {
            match path[prefix.len()..].split_once('/') {
                None => entry(path, Some(object)),
                Some((dir, _)) => {
                    collections.insert(format!("{prefix}{dir}/"));
                }
            }
        }
        for collection in collections {
            entry(&collection, None);
        }
    } else {
        for (path, object) in &under {
            entry(path, Some(object));
        }
    }
    xml.push_str("</multistatus>");
    let mut response = status(StatusCode::MULTI_STATUS);
    *response.body_mut() = Full::new(Bytes::from(xml));
    response
}
