//! Integration tests of the `volley` binary against servers the tests start on 127.0.0.1.

mod capacity;
mod ci;
mod convert;
mod demo;
mod faults;
mod groups;
mod grpc;
mod hardening;
mod history;
mod html;
mod k8s;
mod live;
mod netns;
mod open_model;
mod populations;
mod prometheus;
mod report;
mod run;
mod scenario;
mod scenario_server;
mod segments;
mod server_metrics;
mod spring;
mod support;
mod sweep;
mod tls;
