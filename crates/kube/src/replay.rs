//! For tests: an API server on 127.0.0.1 that answers with what a real kube-apiserver answered
//! (`scripts/kube-watch-record.sh`, fixtures/kube/): each resource's recorded list, then its
//! recorded watch stream from the asked resourceVersion, chunked and paced as recorded (faster
//! by `speed`); a watch can be cut in the middle of a line, or ended by a 410 Gone (the next
//! list is then the state at the end of the story), and a resource can be refused (403).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};

/// What goes wrong, on the first watch (or every request) of one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Nothing.
    None,
    /// The first watch of `resource` is cut in the middle of the line after `after` lines,
    /// and the next watch of it is refused once (500, as when etcd times out; kube retries a 503 by itself).
    Cut {
        /// `pods`, `endpointslices` ...
        resource: &'static str,
        /// Lines sent whole before the cut.
        after: usize,
    },
    /// The first watch of `resource` ends with a 410 Gone after `after` lines.
    Gone {
        /// `pods` ...
        resource: &'static str,
        /// Lines sent before the 410.
        after: usize,
    },
    /// Every request for `resource` is refused with 403, and a SelfSubjectAccessReview of it
    /// answers `allowed: false`.
    Forbidden {
        /// `deployments`, `pods` ... (`metrics.k8s.io/pods`: only the metrics API's;
        /// `nodes/proxy`: the kubelet's pages through the node proxy).
        resource: &'static str,
    },
    /// The Deployment is rolling out from the first GET of it for `ms` milliseconds: the
    /// controller has not seen its generation for the first third, then one of its replicas
    /// is updated with the old ones still there; after `ms`, all of them are (the recorded
    /// object with its generation one higher).
    Rollout {
        /// How long the rollout takes.
        ms: u64,
    },
}

/// Whether a SelfSubjectAccessReview of `group`/`resource` is denied by `fault`.
fn denied(fault: Fault, group: &str, resource: &str) -> bool {
    match fault {
        Fault::Forbidden {
            resource: "nodes/proxy",
        } => group.is_empty() && resource == "nodes/proxy",
        Fault::Forbidden { resource: r } => match r.split_once('/') {
            Some((g, res)) => g == group && res == resource,
            None => r == resource && group != "metrics.k8s.io",
        },
        _ => false,
    }
}

/// The Deployment `d` at `elapsed` into a rollout of `ms` ([`Fault::Rollout`]).
fn rolling(d: &Value, elapsed: Duration, ms: u64) -> Value {
    let mut d = d.clone();
    let generation = d["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
    let spec = d["spec"]["replicas"].as_i64().unwrap_or(1);
    d["metadata"]["generation"] = json!(generation);
    let third = Duration::from_millis(ms / 3);
    let status = if elapsed < third {
        json!({"observedGeneration": generation - 1, "replicas": spec, "updatedReplicas": spec,
               "readyReplicas": spec, "availableReplicas": spec})
    } else if elapsed < Duration::from_millis(ms) {
        json!({"observedGeneration": generation, "replicas": spec + 1, "updatedReplicas": 1,
               "readyReplicas": spec, "availableReplicas": spec})
    } else {
        json!({"observedGeneration": generation, "replicas": spec, "updatedReplicas": spec,
               "readyReplicas": spec, "availableReplicas": spec})
    };
    d["status"] = status;
    d
}

struct Recorded {
    lists: HashMap<String, Value>,
    /// Per resource: (seconds since the watches started, line, its object's resourceVersion).
    watches: HashMap<String, Vec<(f64, String, u64)>>,
}

struct Shared {
    rec: Recorded,
    fault: Fault,
    speed: f64,
    watched: Mutex<HashMap<String, usize>>,
    gone: Mutex<bool>,
    /// When the first GET of the Deployment came ([`Fault::Rollout`]).
    rollout_from: Mutex<Option<std::time::Instant>>,
    /// Every request, `METHOD path?query`, for the tests to check.
    log: Mutex<Vec<String>>,
    /// The kubelet's `/metrics/resource` pages ([`Replay::kubelet`]) and how many were asked.
    kubelet: Mutex<(Vec<String>, usize)>,
}

/// A running replay; stops when dropped.
pub struct Replay {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn rv_of(v: &Value) -> u64 {
    v["object"]["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn read(dir: &Path) -> Recorded {
    let mut lists = HashMap::new();
    let mut watches = HashMap::new();
    for e in std::fs::read_dir(dir).expect("the fixture directory") {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&p).unwrap();
        if let Some(r) = name
            .strip_prefix("list-")
            .and_then(|n| n.strip_suffix(".json"))
        {
            lists.insert(r.to_string(), serde_json::from_str(&text).unwrap());
        } else if name == "get-deployment.json" {
            lists.insert(
                "get-deployment".into(),
                serde_json::from_str(&text).unwrap(),
            );
        } else if let Some(r) = name
            .strip_prefix("watch-")
            .and_then(|n| n.strip_suffix(".tsv"))
        {
            let lines = text
                .lines()
                .filter_map(|l| {
                    let (t, line) = l.split_once('\t')?;
                    let v: Value = serde_json::from_str(line).ok()?;
                    Some((t.parse().ok()?, line.to_string(), rv_of(&v)))
                })
                .collect();
            watches.insert(r.to_string(), lines);
        }
    }
    Recorded { lists, watches }
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

fn answer(code: u16, v: &Value) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap())
        .header("content-type", "application/json")
        .body(Body::from(v.to_string()))
        .unwrap()
}

/// The list at the end of the story: the recorded list with every watch line applied.
fn final_list(list: &Value, lines: &[(f64, String, u64)]) -> Value {
    let mut items: Vec<Value> = list["items"].as_array().cloned().unwrap_or_default();
    let mut rv = list["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0u64);
    for (_, line, r) in lines {
        let v: Value = serde_json::from_str(line).unwrap();
        rv = rv.max(*r);
        let name = v["object"]["metadata"]["name"].clone();
        match v["type"].as_str() {
            Some("ADDED" | "MODIFIED") => {
                items.retain(|i| i["metadata"]["name"] != name);
                items.push(v["object"].clone());
            }
            Some("DELETED") => items.retain(|i| i["metadata"]["name"] != name),
            _ => {}
        }
    }
    let mut out = list.clone();
    out["items"] = Value::Array(items);
    out["metadata"]["resourceVersion"] = Value::String(rv.to_string());
    out
}

async fn handle(shared: Arc<Shared>, req: Request<Body>) -> Response {
    let path = req.uri().path().to_string();
    let query: HashMap<String, String> =
        form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    shared.log.lock().unwrap().push(format!(
        "{} {}?{}",
        req.method(),
        path,
        req.uri().query().unwrap_or("")
    ));
    if path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" {
        let body = axum::body::to_bytes(req.into_body(), 1 << 16)
            .await
            .unwrap_or_default();
        let mut v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let attrs = &v["spec"]["resourceAttributes"];
        let (group, mut resource) = (
            attrs["group"].as_str().unwrap_or("").to_string(),
            attrs["resource"].as_str().unwrap_or("").to_string(),
        );
        if let Some(sub) = attrs["subresource"].as_str().filter(|s| !s.is_empty()) {
            resource = format!("{resource}/{sub}");
        }
        shared.log.lock().unwrap().push(format!(
            "review {} {group}/{resource} {}",
            attrs["verb"].as_str().unwrap_or(""),
            attrs["namespace"].as_str().unwrap_or("")
        ));
        v["status"] = if denied(shared.fault, &group, &resource) {
            json!({"allowed": false, "reason": ""})
        } else {
            json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"volley-watch/shop\""})
        };
        return answer(201, &v);
    }
    if path.starts_with("/apis/metrics.k8s.io") {
        if let Fault::Forbidden {
            resource: "metrics.k8s.io/pods",
        } = shared.fault
        {
            return answer(
                403,
                &status(403, "Forbidden", "pods.metrics.k8s.io is forbidden"),
            );
        }
        return answer(
            404,
            &status(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ),
        );
    }
    if let Some(node) = path
        .strip_prefix("/api/v1/nodes/")
        .and_then(|p| p.strip_suffix("/proxy/metrics/resource"))
    {
        if let Fault::Forbidden {
            resource: "nodes/proxy",
        } = shared.fault
        {
            let msg = format!(
                "nodes \"{node}\" is forbidden: User \"volley\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope"
            );
            return answer(403, &status(403, "Forbidden", &msg));
        }
        let page = {
            let mut k = shared.kubelet.lock().unwrap();
            let n = k.1;
            k.1 += 1;
            k.0.get(n.min(k.0.len().saturating_sub(1))).cloned()
        };
        return match page {
            Some(p) => Response::builder()
                .status(200)
                .header("content-type", "text/plain; version=0.0.4")
                .body(Body::from(p))
                .unwrap(),
            // A bare API server (the recorded story's) has no nodes.
            None => answer(
                404,
                &status(404, "NotFound", &format!("nodes \"{node}\" not found")),
            ),
        };
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (resource, name) = match segs.iter().position(|s| *s == "namespaces") {
        Some(i) if segs.len() > i + 2 => (
            segs[i + 2].to_string(),
            segs.get(i + 3).map(|s| s.to_string()),
        ),
        _ => return answer(404, &status(404, "NotFound", "not recorded")),
    };
    if let Fault::Forbidden { resource: r } = shared.fault
        && r == resource
    {
        let verb = if name.is_some() {
            "get"
        } else if query.contains_key("watch") {
            "watch"
        } else {
            "list"
        };
        let msg = format!(
            "{resource} is forbidden: User \"volley\" cannot {verb} resource \"{resource}\" in API group \"\" in the namespace \"{}\"",
            segs[segs.iter().position(|s| *s == "namespaces").unwrap() + 1]
        );
        return answer(403, &status(403, "Forbidden", &msg));
    }
    if let Some(n) = name {
        return match shared.rec.lists.get("get-deployment") {
            Some(d) if resource == "deployments" && d["metadata"]["name"] == n.as_str() => {
                if let Fault::Rollout { ms } = shared.fault {
                    let from = *shared
                        .rollout_from
                        .lock()
                        .unwrap()
                        .get_or_insert_with(std::time::Instant::now);
                    return answer(200, &rolling(d, from.elapsed(), ms));
                }
                answer(200, d)
            }
            _ => answer(
                404,
                &status(404, "NotFound", &format!("{resource} \"{n}\" not found")),
            ),
        };
    }
    let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    let Some(list) = shared.rec.lists.get(&resource) else {
        return answer(404, &status(404, "NotFound", "not recorded"));
    };
    let lines = shared
        .rec
        .watches
        .get(&resource)
        .cloned()
        .unwrap_or_default();
    if !watch {
        let relist = matches!(shared.fault, Fault::Gone { resource: r, .. } if r == resource)
            && *shared.gone.lock().unwrap();
        return answer(
            200,
            &if relist {
                final_list(list, &lines)
            } else {
                list.clone()
            },
        );
    }
    let from: u64 = query
        .get("resourceVersion")
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let nth = {
        let mut w = shared.watched.lock().unwrap();
        let n = w.entry(resource.clone()).or_default();
        *n += 1;
        *n
    };
    let first = nth == 1;
    if matches!(shared.fault, Fault::Cut { resource: r, .. } if r == resource) && nth == 2 {
        return answer(
            500,
            &status(500, "InternalError", "etcdserver: request timed out"),
        );
    }
    let mut send: Vec<(f64, String)> = lines
        .iter()
        .filter(|l| l.2 > from)
        .map(|l| (l.0, l.1.clone()))
        .collect();
    let mut tail: Option<Result<Bytes, std::io::Error>> = None;
    match shared.fault {
        Fault::Cut { resource: r, after } if r == resource && first && send.len() > after => {
            let half = send[after].1[..send[after].1.len() / 2].to_string();
            send.truncate(after);
            send.push((send.last().map_or(0.0, |l| l.0), half));
            tail = Some(Err(std::io::Error::other("cut")));
        }
        Fault::Gone { resource: r, after } if r == resource && first && send.len() > after => {
            send.truncate(after);
            let t = send.last().map_or(0.0, |l| l.0);
            let gone = json!({"type": "ERROR", "object": status(410, "Expired", "too old resource version: 1 (2)")});
            send.push((t, format!("{gone}\n")));
            *shared.gone.lock().unwrap() = true;
            tail = Some(Ok(Bytes::new()));
        }
        _ => {}
    }
    let speed = shared.speed;
    let paced = futures::stream::iter(send).scan(
        if first { 0.0 } else { f64::NAN },
        move |prev, (t, line)| {
            let wait = if prev.is_nan() {
                0.0
            } else {
                ((t - *prev) / speed).max(0.0)
            };
            *prev = t;
            async move {
                tokio::time::sleep(Duration::from_secs_f64(wait)).await;
                let line = if line.ends_with('\n')
                    || !line.starts_with('{')
                    || serde_json::from_str::<Value>(&line).is_err()
                {
                    line
                } else {
                    format!("{line}\n")
                };
                Some(Ok::<Bytes, std::io::Error>(Bytes::from(line)))
            }
        },
    );
    let body = match tail {
        Some(Err(e)) => paced
            .chain(futures::stream::once(async move { Err(e) }))
            .boxed(),
        Some(Ok(_)) => paced.boxed(),
        None => paced.chain(futures::stream::pending()).boxed(),
    };
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(Body::from_stream(body))
        .unwrap()
}

impl Replay {
    /// Serves the fixture `dir` with `fault`, recorded gaps divided by `speed`.
    pub fn serve(dir: &Path, fault: Fault, speed: f64) -> Replay {
        let shared = Arc::new(Shared {
            rec: read(dir),
            fault,
            speed,
            watched: Mutex::new(HashMap::new()),
            gone: Mutex::new(false),
            rollout_from: Mutex::new(None),
            log: Mutex::new(Vec::new()),
            kubelet: Mutex::new((Vec::new(), 0)),
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let s = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                url_tx
                    .send(format!("http://{}", listener.local_addr().unwrap()))
                    .unwrap();
                let app =
                    axum::Router::new().fallback(move |req: Request<Body>| handle(s.clone(), req));
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stop_rx => {}
                }
            });
        });
        Replay {
            url: url_rx.recv().unwrap(),
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// A kubeconfig for this server with `token` as the user's bearer token.
    pub fn kubeconfig(&self, token: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: replay\n  cluster: {{server: '{}'}}\n\
             users:\n- name: u\n  user: {{token: {token}}}\ncontexts:\n- name: replay\n  context: \
             {{cluster: replay, user: u, namespace: shop}}\ncurrent-context: replay\n",
            self.url
        )
    }

    /// Answers the kubelet's resource metrics through the node proxy
    /// (`/api/v1/nodes/{node}/proxy/metrics/resource`) with `pages`, one a request in order,
    /// the last one again after them (as a kubelet that has not refreshed its stats); 404
    /// when none are given.
    pub fn kubelet(&self, pages: Vec<String>) {
        *self.shared.kubelet.lock().unwrap() = (pages, 0);
    }

    /// Every request so far, `METHOD path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.shared.log.lock().unwrap().clone()
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
