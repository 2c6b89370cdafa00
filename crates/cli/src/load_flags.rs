//! The load options as flags: one `--flag` per entry of the scenario crate's option table
//! (`volley_scenario::load::OPTIONS`), with the conflicts of its `CONFLICTS` table, parsed by
//! the same functions that read a scenario file's `load:` keys. Nothing about a load option
//! is written here, so an option is added in one place for flags and files alike.

use clap::error::ErrorKind;
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};
use volley_scenario::load::{CONFLICTS, LoadSpec, OPTIONS};

/// The load options given on the command line.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoadFlags(pub(crate) LoadSpec);

impl FromArgMatches for LoadFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut spec = LoadSpec::default();
        for o in OPTIONS {
            if let Some(v) = m.get_one::<String>(o.key) {
                spec.set(o.key, v).map_err(|e| {
                    clap::Error::raw(
                        ErrorKind::ValueValidation,
                        format!("{} {v}: {e}\n", o.flag()),
                    )
                })?;
            }
        }
        Ok(LoadFlags(spec))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for LoadFlags {
    fn augment_args(cmd: Command) -> Command {
        OPTIONS.iter().fold(cmd, |cmd, o| {
            let mut arg = Arg::new(o.key)
                .long(o.key.replace('_', "-"))
                .value_name(o.value_name)
                .help(o.help);
            for (key, others, _) in CONFLICTS.iter().filter(|(key, _, _)| *key == o.key) {
                debug_assert_eq!(*key, o.key);
                arg = arg.conflicts_with_all(others.iter().copied());
            }
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
