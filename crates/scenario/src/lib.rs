//! volley-scenario
