//! A VU's variables: `vu`, `iteration`, `env`, the scenario's `variables`, data rows and
//! extracted values — a handful of names, kept for the VU's whole life.
//!
//! They are a vector sorted by name rather than a `BTreeMap`: a B-tree's first insert
//! allocates a whole node (eleven keys and values, ~550 bytes) in every VU, where a vector
//! holds 48 bytes a variable. Names fixed by volley are `'static` and cost nothing; a
//! scenario's names are copied the first time they are set, not on every iteration.

use std::borrow::Cow;

use minijinja::Value;

/// Variables by name, sorted (minijinja's context sees them in this order).
#[derive(Debug, Default)]
pub(crate) struct VuVars(Vec<(Cow<'static, str>, Value)>);

impl VuVars {
    /// The variable `name`, if set.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.find(name).ok().map(|i| &self.0[i].1)
    }

    /// Sets `name` (a name volley gives) to `value`.
    pub(crate) fn set_static(&mut self, name: &'static str, value: Value) {
        self.put(name, || Cow::Borrowed(name), value);
    }

    /// Sets `name` to `value`; the name is copied only if it was not set before.
    pub(crate) fn set(&mut self, name: &str, value: Value) {
        self.put(name, || Cow::Owned(name.to_owned()), value);
    }

    /// Every variable, by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    fn put(&mut self, name: &str, owned: impl FnOnce() -> Cow<'static, str>, value: Value) {
        match self.find(name) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (owned(), value)),
        }
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_ref().cmp(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_by_name_and_set_in_place_as_a_map_would_be() {
        let mut vars = VuVars::default();
        let mut map = std::collections::BTreeMap::new();
        for (i, name) in [
            "vu",
            "token",
            "env",
            "iteration",
            "token",
            "a",
            "vu",
            "zz",
            "iteration",
        ]
        .into_iter()
        .enumerate()
        {
            vars.set(name, Value::from(i));
            map.insert(name.to_string(), Value::from(i));
        }
        vars.set_static("vu", Value::from(99));
        map.insert("vu".into(), Value::from(99));
        let got: Vec<(String, Value)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let want: Vec<(String, Value)> = map.into_iter().collect();
        assert_eq!(got, want);
        assert_eq!(vars.get("token"), Some(&Value::from(4)));
        assert_eq!(vars.get("nope"), None);
    }
}
