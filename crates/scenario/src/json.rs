//! A JSON body whose strings are templates: kept as a tree so that the literal parts are
//! written as they are and only the templated strings are rendered per request. Used by HTTP
//! steps' `json:` bodies and gRPC steps' messages.

use crate::Error;
use crate::template::{Template, Templates, Vars};

/// A JSON value whose strings are templates.
#[derive(Debug)]
pub enum JsonTemplate {
    /// A value without templates.
    Fixed(serde_json::Value),
    /// A templated string (or a lone expression keeping its type).
    Text(Template),
    /// An array.
    Array(Vec<JsonTemplate>),
    /// An object, in file order.
    Object(Vec<(String, JsonTemplate)>),
}

impl JsonTemplate {
    /// The body as a JSON value, every template rendered (object fields in file order).
    pub fn value(
        &self,
        templates: &Templates,
        vars: &minijinja::Value,
    ) -> Result<serde_json::Value, Error> {
        Ok(match self {
            JsonTemplate::Fixed(v) => v.clone(),
            JsonTemplate::Text(t) => templates.render_json(t, vars)?,
            JsonTemplate::Array(items) => serde_json::Value::Array(
                items
                    .iter()
                    .map(|i| i.value(templates, vars))
                    .collect::<Result<_, _>>()?,
            ),
            JsonTemplate::Object(fields) => serde_json::Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), v.value(templates, vars)?)))
                    .collect::<Result<_, Error>>()?,
            ),
        })
    }

    /// Writes the body as JSON text, appending to `out`: the bytes `serde_json::to_vec` of
    /// [`JsonTemplate::value`] gives — keys in order, the last of a repeated key kept —
    /// without building the value. `text` is scratch.
    pub fn write(
        &self,
        templates: &Templates,
        vars: &dyn Vars,
        text: &mut String,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        if let Err(e) = self.write_in_key_order(templates, vars, text, out) {
            // Fields are rendered in key order here; the first failure in file order is the
            // one to tell.
            self.value(templates, &vars.context())?;
            return Err(e);
        }
        Ok(())
    }

    fn write_in_key_order(
        &self,
        templates: &Templates,
        vars: &dyn Vars,
        text: &mut String,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let json =
            |e: serde_json::Error| Error::value(format!("a JSON body could not be written: {e}"));
        match self {
            JsonTemplate::Fixed(v) => serde_json::to_writer(&mut *out, v).map_err(json)?,
            JsonTemplate::Text(t) => templates.write_json(t, vars, text, out)?,
            JsonTemplate::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write_in_key_order(templates, vars, text, out)?;
                }
                out.push(b']');
            }
            JsonTemplate::Object(fields) => {
                let mut field = |i: usize, first: bool, out: &mut Vec<u8>| {
                    if !first {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, &fields[i].0).map_err(json)?;
                    out.push(b':');
                    fields[i].1.write_in_key_order(templates, vars, text, out)
                };
                out.push(b'{');
                if fields.windows(2).all(|w| w[0].0 < w[1].0) {
                    for i in 0..fields.len() {
                        field(i, i == 0, out)?;
                    }
                } else {
                    let mut order: Vec<usize> = (0..fields.len()).collect();
                    order.sort_by(|&a, &b| fields[a].0.cmp(&fields[b].0).then(a.cmp(&b)));
                    let mut first = true;
                    for (j, &i) in order.iter().enumerate() {
                        if order
                            .get(j + 1)
                            .is_some_and(|&next| fields[next].0 == fields[i].0)
                        {
                            continue;
                        }
                        field(i, first, out)?;
                        first = false;
                    }
                }
                out.push(b'}');
            }
        }
        Ok(())
    }
}
