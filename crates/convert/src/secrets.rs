//! Secrets found in what is converted — Authorization values, cookies, API keys and tokens
//! in headers, query strings and bodies — become `env.NAME` references with a comment, so a
//! recorded credential is never written into a scenario file. The same value found in several
//! places gets one environment variable.

use std::collections::HashMap;

pub(crate) use volley_scenario::secret::{secret, secret_name, secret_param, xml_secrets};

use crate::text::{Names, env_name};

/// The environment variables a conversion asks for.
#[derive(Debug, Default)]
pub(crate) struct Secrets {
    by_value: HashMap<String, String>,
    names: Names,
    /// Each variable and what it stands for, in order of first use.
    pub(crate) needed: Vec<(String, String)>,
}

impl Secrets {
    /// The variable standing for `value` (named after `hint` the first time it is seen).
    pub(crate) fn var(&mut self, hint: &str, value: &str, what: &str) -> String {
        if let Some(name) = self.by_value.get(value) {
            return name.clone();
        }
        let name = self.names.unique(&env_name(hint));
        self.by_value.insert(value.to_string(), name.clone());
        self.needed.push((name.clone(), what.to_string()));
        name
    }

    /// Every credential seen, with its variable.
    pub(crate) fn values(&self) -> impl Iterator<Item = (&str, &str)> {
        self.by_value.iter().map(|(v, n)| (v.as_str(), n.as_str()))
    }

    /// An Authorization header value as a template and the comment that goes with it.
    pub(crate) fn authorization(&mut self, value: &str) -> (String, String) {
        let (scheme, cred) = value.split_once(' ').unwrap_or(("", value));
        let (hint, what) = match scheme.to_ascii_lowercase().as_str() {
            "bearer" => ("token", "the bearer token"),
            "basic" => ("basic_auth", "base64 of user:password"),
            _ => ("authorization", "the Authorization value"),
        };
        let cred = cred.trim();
        let var = self.var(hint, cred, what);
        let template = if scheme.is_empty() {
            format!("{{{{ env.{var} }}}}")
        } else {
            format!("{scheme} {{{{ env.{var} }}}}")
        };
        (
            template,
            format!("credential from the recording; set env.{var} ({what})"),
        )
    }

    /// A JSON body's credentials (by key or shape, at any depth) as `env.` references added
    /// to `subs` (pointer → template), except where `subs` already has one; each with a
    /// comment naming `from` (`the recording`, `the command`).
    pub(crate) fn json_fields(
        &mut self,
        body: &serde_json::Value,
        subs: &mut HashMap<String, String>,
        comments: &mut Vec<String>,
        from: &str,
    ) {
        for l in crate::exchange::leaves(body) {
            if !subs.contains_key(&l.pointer)
                && let Some(k) = &l.key
                && secret(k, &l.text)
            {
                let var = self.var(k, &l.text, &format!("JSON field `{k}`"));
                comments.push(format!("`{k}` came from {from}; set env.{var}"));
                subs.insert(l.pointer.clone(), format!("{{{{ env.{var} }}}}"));
            }
        }
    }

    /// A form field's value: an `env.` reference for a credential (with a comment naming
    /// `from`), else `None`.
    pub(crate) fn form_field(
        &mut self,
        key: &str,
        value: &str,
        comments: &mut Vec<String>,
        from: &str,
    ) -> Option<String> {
        secret(key, value).then(|| {
            let var = self.var(key, value, &format!("form field `{key}`"));
            comments.push(format!("`{key}` came from {from}; set env.{var}"));
            format!("{{{{ env.{var} }}}}")
        })
    }

    /// A query parameter's value: `{{ env.NAME | urlencode }}` for a credential (with a
    /// comment naming `from`), else `None`.
    pub(crate) fn query_param(
        &mut self,
        name: &str,
        value: &str,
        comments: &mut Vec<String>,
        from: &str,
    ) -> Option<String> {
        secret_param(name, value).then(|| {
            let var = self.var(name, value, &format!("query parameter `{name}`"));
            comments.push(format!(
                "query parameter `{name}` came from {from}; set env.{var}"
            ));
            format!("{{{{ env.{var} | urlencode }}}}")
        })
    }

    /// A header's value and its comment: `{{ env.NAME }}` for a credential, else `None`.
    pub(crate) fn header_value(
        &mut self,
        name: &str,
        value: &str,
        from: &str,
    ) -> Option<(String, String)> {
        secret_param(name, value).then(|| {
            let var = self.var(name, value, &format!("header `{name}`"));
            (
                format!("{{{{ env.{var} }}}}"),
                format!("came from {from}; set env.{var}"),
            )
        })
    }

    /// The comment lines for the top of the file.
    pub(crate) fn header(&self) -> Vec<String> {
        if self.needed.is_empty() {
            return Vec::new();
        }
        let mut lines = vec!["Credentials were replaced by environment variables (never written here); set them before `volley check`/`volley run`:".to_string()];
        for (name, what) in &self.needed {
            lines.push(format!("  {name}: {what}"));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_variable_per_value() {
        let mut s = Secrets::default();
        let (t, c) = s.authorization("Bearer abc.def");
        assert_eq!(t, "Bearer {{ env.TOKEN }}");
        assert!(c.contains("env.TOKEN") && !c.contains("abc"));
        assert_eq!(s.var("token", "abc.def", "x"), "TOKEN");
        assert_eq!(s.var("token", "other", "x"), "TOKEN_2");
        assert_eq!(s.header().len(), 3);
    }
}
