//! Event-stream steps: the stream opened on a connection of its own (HTTP/1.1) and read in
//! the background until the iteration ends, or to its end when the step waits for it.

use super::*;

impl Exec<'_> {
    /// Opens the stream and reads it in the background (or to its end with `wait`).
    pub(super) async fn sse(&mut self, step: &SseStep) -> Next {
        let id = step.call.id;
        let shown;
        // The stream is made inside the expression that awaits or spawns it: what only
        // making it needs, and a future held in a local first (kept twice: the local and the
        // awaited copy), are then no part of this step's state while the stream is open.
        let (text, passed) = if step.wait {
            {
                let (stream, req);
                (stream, req, shown) = match self.sse_stream(step) {
                    Ok(made) => made,
                    Err(abandoned) => return abandoned,
                };
                stream.run(req)
            }
            .await
        } else {
            let (stream, req);
            (stream, req, shown) = match self.sse_stream(step) {
                Ok(made) => made,
                Err(abandoned) => return abandoned,
            };
            let pending = tokio::task::spawn_local(stream.run(req));
            self.background
                .push((pending, self.trace.map(|t| t.borrow().len())));
            (String::from("still open"), true)
        };
        if let Some((request, request_headers)) = shown {
            self.push_trace(Trace {
                step: self.step_name(id),
                request,
                request_headers,
                outcome: text,
                passed,
                ..Trace::default()
            });
        }
        self.think(step.call.think_time.sample()).await;
        Next::Go
    }

    /// The SSE step rendered for this iteration: the stream, its request, and what `volley
    /// check` shows of it (made only when shown: a held stream keeps nothing it does not read
    /// with). When it cannot be rendered, the step is abandoned: the error is what comes next.
    #[allow(clippy::type_complexity)]
    pub(super) fn sse_stream(
        &mut self,
        step: &SseStep,
    ) -> Result<
        (
            SseStream,
            PreparedRequest,
            Option<(String, Vec<(String, String)>)>,
        ),
        Next,
    > {
        let vars = StepVars::new(&self.state.vars);
        let rendered = self
            .prepare(&step.call, &vars, false)
            .and_then(|(path, mut headers)| {
                headers.retain(|(k, _)| {
                    !k.eq_ignore_ascii_case("accept") && !k.eq_ignore_ascii_case("cache-control")
                });
                headers.push(("Accept".into(), "text/event-stream".into()));
                headers.push(("Cache-Control".into(), "no-cache".into()));
                // Only the HTTP/1.1 bytes: the stream has a connection of its own, which speaks 1.1.
                let req = PreparedRequest::build(
                    &self.ctx.target,
                    Speaks::Http1,
                    "GET",
                    &path,
                    &headers,
                    Vec::new(),
                )
                .map_err(String::from)?;
                Ok((path, headers, req))
            });
        let (path, headers, req) = match rendered {
            Ok(r) => r,
            Err(e) => {
                return Err(self.abandon(
                    step.call.id,
                    format!("SSE {}", step.call.url.source()),
                    e,
                ));
            }
        };
        self.sent += 1;
        let shown = self.trace.map(|_| {
            (
                format!("SSE {}", self.ctx.target.url_of(&path, false)),
                headers,
            )
        });
        let stream = SseStream {
            ctx: self.ctx.clone(),
            id: step.call.id,
            want: step.events,
            limit: step.call.timeout,
            open_timeout: self.timeout(&step.call),
            stop: self
                .streams
                .get_or_init(|| self.ctx.shared.abort.child_token())
                .clone(),
            redact: self.scenario.clone(),
        };
        Ok((stream, req, shown))
    }
}
