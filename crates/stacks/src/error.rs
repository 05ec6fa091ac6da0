//! The error of discovery and locating ([`StackError`]); it names nothing else of the crate, so
//! every file can use it without importing the crate root.

/// What stops discovery or locating a state: a file that cannot be read, or a stack whose backend
/// settings are incomplete or unsupported. The message names the stack and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("stack {stack}: {message}")]
    Backend { stack: String, message: String },
}
