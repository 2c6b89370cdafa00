//! Run ids: one id names the Job, the ConfigMap, the pods' label and the results' prefix in
//! the bucket, so it must be a valid Kubernetes name everywhere it goes.

use jiff::Timestamp;

use crate::{Error, Repr};

/// The longest run id: `volley-<id>-plan` and the pods' host names `volley-<id>-<index>`
/// must stay within a DNS label's 63 characters.
pub const MAX_RUN_ID: usize = 44;

/// Checks that `id` is a DNS label (a-z, 0-9, `-`, alphanumeric at both ends) of at most
/// [`MAX_RUN_ID`] characters.
pub fn validate_run_id(id: &str) -> Result<(), Error> {
    let ok = !id.is_empty()
        && id.len() <= MAX_RUN_ID
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(Repr::Invalid(format!(
            "--run-id `{id}`: a run id names Kubernetes objects, so it must be 1-{MAX_RUN_ID} characters of a-z, 0-9 and `-`, starting and ending with a letter or digit, e.g. checkout-20261123-0500"
        )).into())
    }
}

/// A run id from the plan's name and the time: `<name>-<yyyymmdd>-<hhmmss>`, the name
/// lower-cased with anything else than a-z and 0-9 turned into `-` and cut to fit.
pub fn run_id_from(name: &str, at: Timestamp) -> String {
    let stamp = at.strftime("%Y%m%d-%H%M%S").to_string();
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.truncate(MAX_RUN_ID - stamp.len() - 1);
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        format!("run-{stamp}")
    } else {
        format!("{slug}-{stamp}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_from_names_are_valid() {
        let at: Timestamp = "2026-11-23T05:00:07Z".parse().unwrap();
        assert_eq!(
            run_id_from("Pair Room_flow", at),
            "pair-room-flow-20261123-050007"
        );
        assert_eq!(run_id_from("127.0.0.1", at), "127-0-0-1-20261123-050007");
        assert_eq!(run_id_from("___", at), "run-20261123-050007");
        let long = run_id_from(&"x".repeat(200), at);
        assert_eq!(long.len(), MAX_RUN_ID);
        for id in [
            run_id_from("Pair Room_flow", at),
            long,
            run_id_from("-a-", at),
        ] {
            validate_run_id(&id).unwrap();
        }
    }

    #[test]
    fn bad_ids_are_refused() {
        for bad in [
            "",
            "Upper",
            "under_score",
            "-lead",
            "trail-",
            &"a".repeat(MAX_RUN_ID + 1),
        ] {
            let e = validate_run_id(bad).unwrap_err().to_string();
            assert!(e.contains("a-z, 0-9"), "{bad}: {e}");
        }
    }
}
