//! The demo target's knobs as flags of `volley target serve`: one `--flag` per entry of
//! `volley_demo::KNOBS`, defaults from `Knobs::default()`, values set by `Knobs::set` — the
//! same table `volley sweep --demo` reads, so a knob is added in the demo crate alone.

use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use volley_demo::{KNOBS, Knobs};

/// The knobs given on the command line, over the defaults.
#[derive(Debug, Clone, Default)]
pub(crate) struct KnobFlags(pub(crate) Knobs);

impl FromArgMatches for KnobFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut knobs = Knobs::default();
        for k in KNOBS {
            let value = if k.is_switch() {
                m.get_flag(k.name).then(|| "on".to_string())
            } else {
                m.get_one::<String>(k.name).cloned()
            };
            if let Some(v) = value {
                knobs.set(k.name, &v).map_err(|e| {
                    clap::Error::raw(ErrorKind::ValueValidation, format!("--{e}\n"))
                })?;
            }
        }
        Ok(KnobFlags(knobs))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for KnobFlags {
    fn augment_args(cmd: Command) -> Command {
        let defaults = Knobs::default();
        KNOBS.iter().fold(cmd, |cmd, k| {
            let arg = Arg::new(k.name).long(k.name).help(k.help);
            let arg = if k.is_switch() {
                arg.action(ArgAction::SetTrue)
            } else {
                let arg = arg.value_name(k.value_name);
                match defaults.get(k.name) {
                    Some(d) => arg.default_value(d),
                    None => arg,
                }
            };
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
