//! Command-line options of the examples, shared by `#[path]`: `--name value` pairs.

/// The value after `--name`, parsed, or `default`.
///
/// # Panics
/// If `--name` is given without a value that parses (the example's docs list its options).
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        None => default,
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} takes a value (see the example's docs)")),
    }
}
