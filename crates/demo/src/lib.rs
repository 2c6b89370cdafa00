//! volley-demo
