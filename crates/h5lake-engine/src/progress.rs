//! Progress bars of long work, on stderr (indicatif).

/// A bar over `total` units, labelled `msg`, whose counts read as
/// `counts` (an indicatif template fragment, e.g. `"{pos}/{len} chunks"`);
/// hidden unless `show`.
pub fn bar(show: bool, total: u64, msg: &'static str, counts: &str) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{msg}} [{{bar:30}}] {counts} eta {{eta}}"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(msg);
    bar
}
