//! gRPC steps: a unary or server-streaming call on the VU's (or the shared) HTTP/2
//! connection.

use super::*;

impl<'a> Exec<'a> {
    /// Calls a gRPC method on the VU's (or the shared) HTTP/2 connection.
    pub(super) async fn grpc(&mut self, step: &GrpcStep) -> Next {
        let id = step.call.id;
        let vars = StepVars::new(&self.state.vars);
        let what = format!("GRPC {}", step.full_method());
        let Some(method) = step.schema.get() else {
            return self.abandon(
                id,
                what,
                "the method's descriptor is unknown (no `proto`, and reflection was not asked)"
                    .into(),
            );
        };
        let built = (|| {
            let mut headers: Vec<(String, String)> = Vec::new();
            for (n, t) in self.scenario.headers.iter().chain(&step.call.headers) {
                let v = self.render(t, &vars)?;
                headers.retain(|(k, _)| !k.eq_ignore_ascii_case(n));
                headers.push((n.clone(), v));
            }
            let json = step
                .message
                .value(&self.scenario.templates, &vars.context())?;
            let message = crate::grpc::request(method, &json)?;
            Ok::<_, String>((headers, json, message))
        })();
        let (headers, json, message) = match built {
            Ok(b) => b,
            Err(e) => return self.abandon(id, what, e),
        };
        self.sent += 1;
        let keep = !step.extract.is_empty() || step.check.reads_body() || self.trace.is_some();
        let spec = crate::grpc::CallSpec {
            method,
            message,
            metadata: &headers,
            want: step.messages,
            timeout: self.timeout(&step.call),
            keep,
        };
        let channel = self.ctx.grpc.channel(self.state.vu);
        let in_flight = InFlight::new(&self.ctx.recorder, Some(id));
        let recorder = self.ctx.recorder.clone();
        let result = crate::grpc::call(channel, spec, &mut || {
            recorder.borrow_mut().record_events(id, 1)
        })
        .await;
        let _ = in_flight.done();
        let queued = std::mem::take(&mut self.queued_us);
        let (outcome, extracted, called) = match result {
            Err((f, _)) => {
                let msg = f.message.clone();
                self.fail(id, f.kind, f.message);
                (Err(msg), Vec::new(), None)
            }
            Ok(mut done) => {
                done.exchange.queued_us = queued;
                let view = ResponseView {
                    status: 200,
                    headers: &done.headers,
                    body: &done.body,
                };
                let render = |t: &Template| self.render(t, &vars);
                match judge(&step.check, &step.extract, &view, &render) {
                    Ok(values) => {
                        self.ctx.recorder.borrow_mut().record_exchange(
                            Some(id),
                            &done.exchange,
                            true,
                        );
                        (Ok(()), values, Some(done))
                    }
                    Err(e) => {
                        self.fail(id, ErrorKind::Check, e.clone());
                        (Err(e), Vec::new(), Some(done))
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
            let scheme = if self.ctx.target.tls { "https" } else { "http" };
            self.push_trace(Trace {
                step: self.step_name(id),
                request: format!(
                    "GRPC {scheme}://{}/{}",
                    self.ctx.target.authority,
                    step.full_method()
                ),
                request_headers: headers,
                request_body: excerpt(json.to_string().as_bytes()),
                status: called.as_ref().map_or(0, |c| c.exchange.status),
                response_headers: called
                    .as_ref()
                    .map(|c| c.headers.clone())
                    .unwrap_or_default(),
                response_body: called
                    .as_ref()
                    .map(|c| excerpt(&c.body))
                    .unwrap_or_default(),
                ttfb_ms: called
                    .as_ref()
                    .map_or(0.0, |c| c.exchange.ttfb_us as f64 / 1000.0),
                total_ms: called
                    .as_ref()
                    .map_or(0.0, |c| c.exchange.total_us as f64 / 1000.0),
                passed: !failed,
                outcome: match (&outcome, &called) {
                    (Ok(()), Some(c)) if method.is_server_streaming() => {
                        format!("OK: {} messages", c.messages)
                    }
                    (Ok(()), _) => "OK".to_string(),
                    (Err(e), _) => e.clone(),
                },
                extracted: shown,
            });
        }
        for (k, v) in extracted {
            self.state.vars.set(&k, v);
        }
        if failed && !step.extract.is_empty() {
            return Next::EndIteration;
        }
        self.think(step.call.think_time.sample()).await;
        Next::Go
    }
}
