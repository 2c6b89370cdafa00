//! Integration tests of the `volley` binary against servers the tests start on 127.0.0.1.

mod report;
mod run;
mod support;
mod demo;
mod tls;
mod open_model;
mod html;
mod server_metrics;
mod sweep;
mod groups;
mod scenario;
mod scenario_server;
mod faults;
mod segments;
mod netns;
mod ci;
mod history;
mod k8s;
mod live;
mod prometheus;
mod populations;
mod convert;
mod grpc;
