//! volley-cli
