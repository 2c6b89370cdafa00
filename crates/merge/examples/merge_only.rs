//! `volley_merge::merge` alone, without the report `volley merge` writes afterwards, to
//! measure the merge itself: `merge_only OUT INPUT...`.

fn main() {
    let args: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    let Some((out, inputs)) = args.split_first() else {
        eprintln!("usage: merge_only OUT INPUT...");
        std::process::exit(2);
    };
    match volley_merge::merge(inputs, out, &volley_merge::MergeOptions::default()) {
        Ok(m) => eprintln!(
            "merged {} segments, {} intervals, status {}",
            m.segments.len(),
            m.intervals,
            m.status.name()
        ),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
