//! HTTP steps: the request rendered (the one renderer: into the worker's scratch buffers, or
//! built once for a step without templates), sent on the VU's connection, the response judged.

use super::*;

/// A step's request as rendered: its path on the target (in the scratch buffers), headers
/// and body.
struct Rendered<'s> {
    path: &'s str,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Exec<'_> {
    pub(super) async fn http(&mut self, step: &HttpStep) -> Next {
        let id = step.call.id;
        let vars = StepVars::new(&self.state.vars);
        let built = if self.trace.is_some() {
            // `volley check` shows what was sent: keep the parts.
            self.build_shown(step, &vars)
                .map(|(req, path, headers, body)| (Rc::new(req), path, headers, body))
        } else {
            self.build(step, &vars)
                .map(|req| (req, String::new(), Vec::new(), Vec::new()))
        };
        let (req, path, headers, body) = match built {
            Ok(b) => b,
            Err(e) => {
                return self.abandon(id, format!("{} {}", step.method, step.call.url.source()), e);
            }
        };
        self.sent += 1;
        let keep = step.reads_body() || self.trace.is_some();
        let mut capture = Capture::new(step.reads_headers() || self.trace.is_some());
        let timeout = self.timeout(&step.call);
        let in_flight = InFlight::new(&self.ctx.recorder, Some(id));
        let result = self
            .client
            .send_capture(
                &req,
                timeout,
                &self.ctx.buffers,
                keep.then_some(&mut capture),
            )
            .await;
        drop(req);
        let took = in_flight.done();
        let queued = std::mem::take(&mut self.queued_us);
        let must_extract = !step.extract.is_empty();
        let (outcome, extracted, exchange) = match result {
            Err(f) => {
                let msg = f.message.clone();
                let message = self.scenario.redact(&f.message);
                self.ctx.recorder.borrow_mut().record_failure_after(
                    Some(id),
                    Failure::new(f.kind, message),
                    crate::dial::micros(took) + queued,
                );
                (Err(msg), Vec::new(), None)
            }
            Ok(mut ex) => {
                ex.queued_us = queued;
                let statuses = step
                    .check
                    .status
                    .as_ref()
                    .unwrap_or(&self.ctx.plan.expect_status);
                if !statuses.contains(ex.status) {
                    self.ctx
                        .recorder
                        .borrow_mut()
                        .record_exchange(Some(id), &ex, false);
                    (Err(format!("HTTP {}", ex.status)), Vec::new(), Some(ex))
                } else {
                    let view = ResponseView {
                        status: ex.status,
                        headers: &capture.headers,
                        body: &capture.body,
                    };
                    let render = |t: &Template| self.render(t, &vars);
                    match judge(&step.check, &step.extract, &view, &render) {
                        Ok(values) => {
                            self.ctx
                                .recorder
                                .borrow_mut()
                                .record_exchange(Some(id), &ex, true);
                            (Ok(()), values, Some(ex))
                        }
                        Err(e) => {
                            self.fail(id, ErrorKind::Check, e.clone());
                            (Err(e), Vec::new(), Some(ex))
                        }
                    }
                }
            }
        };
        let failed = outcome.is_err();
        if self.trace.is_some() {
            let shown: Vec<(String, String)> = extracted
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect();
            // A header made from an environment variable is a secret in whatever form its
            // template gave it (a slice, a `replace`): shown as *** whole, not by matching.
            let from_env = |n: &str| {
                self.scenario
                    .headers
                    .iter()
                    .chain(&step.call.headers)
                    .any(|(k, t)| k.eq_ignore_ascii_case(n) && t.source().contains("env."))
            };
            let request_headers = headers
                .iter()
                .map(|(n, v)| {
                    let v = if from_env(n) {
                        "***".to_string()
                    } else {
                        v.clone()
                    };
                    (n.clone(), v)
                })
                .collect();
            self.push_trace(Trace {
                step: self.step_name(id),
                request: format!("{} {}", step.method, self.ctx.target.url_of(&path, false)),
                request_headers,
                request_body: excerpt(&body),
                status: exchange.map_or(0, |e| e.status),
                response_headers: capture.headers.clone(),
                response_body: excerpt(&capture.body),
                ttfb_ms: exchange.map_or(0.0, |e| e.ttfb_us as f64 / 1000.0),
                total_ms: exchange.map_or(0.0, |e| e.total_us as f64 / 1000.0),
                passed: !failed,
                outcome: outcome.err().unwrap_or_else(|| "ok".to_string()),
                extracted: shown,
            });
        }
        for (k, v) in extracted {
            self.state.vars.set(&k, v);
        }
        if failed && must_extract {
            return Next::EndIteration;
        }
        self.think(step.call.think_time.sample()).await;
        Next::Go
    }

    /// Step `step`'s request: built once for a step without templates, otherwise rendered
    /// ([`Exec::render_parts`]) into the worker's scratch buffers.
    pub(super) fn build(
        &self,
        step: &HttpStep,
        vars: &StepVars<'_>,
    ) -> Result<Rc<PreparedRequest>, String> {
        let steps = &self.ctx.steps;
        if let Some(req) = steps.literal(step.call.id) {
            return Ok(req);
        }
        let mut scratch = steps.scratch();
        let Rendered {
            path,
            headers,
            body,
        } = self.render_parts(step, vars, &mut scratch)?;
        let req = PreparedRequest::build(
            &self.ctx.target,
            self.client.speaks(),
            &step.method,
            path,
            &headers,
            body,
        )?;
        let req = Rc::new(req);
        if crate::steps::is_literal(step, &self.scenario.headers) {
            steps.keep(step.call.id, req.clone());
        }
        Ok(req)
    }

    /// Step `step`'s request with the path, headers and body it was built from (what
    /// `volley check` shows), rendered as every request is.
    pub(super) fn build_shown(&self, step: &HttpStep, vars: &dyn Vars) -> Result<Shown, String> {
        let mut scratch = Scratch::default();
        let Rendered {
            path,
            headers,
            body,
        } = self.render_parts(step, vars, &mut scratch)?;
        let path = path.to_string();
        let req = PreparedRequest::build(
            &self.ctx.target,
            self.client.speaks(),
            &step.method,
            &path,
            &headers,
            body.clone(),
        )?;
        Ok((req, path, headers, body))
    }

    /// The one renderer of a step's request: its path on the target, its headers (the
    /// scenario's, then the step's, each replacing one of the same name; a content type for a
    /// JSON or form body unless one is given) and its body, rendered into `scratch`.
    fn render_parts<'s>(
        &self,
        step: &HttpStep,
        vars: &dyn Vars,
        scratch: &'s mut Scratch,
    ) -> Result<Rendered<'s>, String> {
        let templates = &self.scenario.templates;
        let Scratch { url, path, text } = scratch;
        url.clear();
        templates
            .render_into(&step.call.url, vars, url)
            .map_err(String::from)?;
        let url: &'s String = url;
        let path = self.path_into(url, false, path)?;
        let mut headers: Vec<(String, String)> =
            Vec::with_capacity(self.scenario.headers.len() + step.call.headers.len() + 1);
        for (n, t) in self.scenario.headers.iter().chain(&step.call.headers) {
            let mut v = String::new();
            templates
                .render_into(t, vars, &mut v)
                .map_err(String::from)?;
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case(n));
            headers.push((n.clone(), v));
        }
        let mut content_type = |ct: &str| {
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("Content-Type".into(), ct.into()));
            }
        };
        let body = match &step.body {
            Body::Empty => Vec::new(),
            Body::Raw(t) => {
                let mut out = String::new();
                templates
                    .render_into(t, vars, &mut out)
                    .map_err(String::from)?;
                out.into_bytes()
            }
            Body::Json(j) => {
                content_type("application/json");
                let mut out = Vec::with_capacity(128);
                j.write(templates, vars, text, &mut out)
                    .map_err(String::from)?;
                out
            }
            Body::Form(fields) => {
                content_type("application/x-www-form-urlencoded");
                let mut out = form_urlencoded::Serializer::new(String::new());
                for (k, t) in fields {
                    text.clear();
                    templates.render_into(t, vars, text).map_err(String::from)?;
                    out.append_pair(k, text);
                }
                out.finish().into_bytes()
            }
        };
        Ok(Rendered {
            path,
            headers,
            body,
        })
    }
}
