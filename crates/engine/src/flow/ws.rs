//! WebSocket steps: the upgrade on a connection of its own, messages sent and the expected
//! one awaited.

use super::*;

impl Exec<'_> {
    pub(super) async fn websocket(&mut self, step: &WsStep) -> Next {
        let id = step.call.id;
        let shown;
        // The call is rendered in a function of its own and made inside the argument: what
        // only rendering needs, and the call itself once moved, are then no part of this
        // step's state while the socket is held.
        let (outcome, status, received, ttfb_ms, total_ms) = match crate::ws::exchange(self.ctx, {
            let call = match self.ws_call(step) {
                Ok(call) => call,
                Err(e) => return self.abandon(id, format!("WS {}", step.call.url.source()), e),
            };
            self.sent += 1;
            // What `volley check` shows of the request, made only when shown: the path,
            // headers and messages go into the exchange, which frees them once they are sent.
            shown = self.trace.map(|_| {
                (
                    format!("WS {}", self.ctx.target.url_of(&call.path, true)),
                    call.send.join(" | "),
                    call.headers.clone(),
                )
            });
            call
        })
        .await
        {
            Ok(done) => {
                let mut rec = self.ctx.recorder.borrow_mut();
                rec.record_events(id, done.messages);
                rec.record_exchange(Some(id), &done.exchange, true);
                (
                    "ok".to_string(),
                    101,
                    done.matched,
                    done.exchange.ttfb_us as f64 / 1000.0,
                    done.exchange.total_us as f64 / 1000.0,
                )
            }
            Err((f, messages)) => {
                self.ctx.recorder.borrow_mut().record_events(id, messages);
                let msg = f.message.clone();
                self.fail(id, f.kind, f.message);
                (msg, 0, String::new(), 0.0, 0.0)
            }
        };
        if let Some((request, request_body, request_headers)) = shown {
            self.push_trace(Trace {
                step: self.step_name(id),
                request,
                request_body,
                request_headers,
                status,
                response_body: excerpt(received.as_bytes()),
                ttfb_ms,
                total_ms,
                passed: outcome == "ok",
                outcome,
                ..Trace::default()
            });
        }
        self.think(step.call.think_time.sample()).await;
        Next::Go
    }

    /// The WebSocket step rendered for this iteration.
    pub(super) fn ws_call(&self, step: &WsStep) -> Result<crate::ws::WsCall, String> {
        let vars = StepVars::new(&self.state.vars);
        let (path, headers) = self.prepare(&step.call, &vars, true)?;
        let send = step
            .send
            .iter()
            .map(|t| self.render(t, &vars))
            .collect::<Result<Vec<_>, _>>()?;
        let expect = step
            .expect
            .as_ref()
            .map(|t| self.render(t, &vars))
            .transpose()?;
        Ok(crate::ws::WsCall {
            path,
            headers,
            send,
            expect,
            timeout: self.timeout(&step.call),
        })
    }
}
