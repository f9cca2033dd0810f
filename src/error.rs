/// Everything that can go wrong, each with what to do about it.
///
/// Variants carry structure a caller can match on: which file and line ([`Error::Load`]), which
/// parameter, value and range ([`Error::InvalidParameter`]), which size and limit
/// ([`Error::TooLarge`]), and memory shortage apart from validation ([`Error::OutOfMemory`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or parsed. `line` is 1-based where the format has lines.
    #[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Load {
        path: String,
        line: Option<usize>,
        message: String,
    },
    /// A parameter is outside its allowed range.
    #[error("{name} = {value} is not allowed: {allowed}")]
    InvalidParameter {
        name: &'static str,
        value: String,
        allowed: String,
    },
    /// Bad data from the caller (indices, references, shapes); the message names the element
    /// and the fix.
    #[error("{0}")]
    InvalidInput(String),
    /// A query had a NaN or infinite coordinate, or coordinates so large that their
    /// differences overflow.
    #[error("query {index} has {what}; pass finite coordinates in metres, within {limit:e} m of the origin", limit = crate::limits::MAX_COORDINATE)]
    NonFiniteQuery { index: usize, what: &'static str },
    /// One query of a batch was refused: `index` says which, `source` why and what to change.
    #[error("query {index} of the batch: {source}")]
    Query { index: usize, source: Box<Error> },
    /// A size the caller controls exceeds a documented limit (see [`crate::limits`]).
    #[error("{what} is {requested}, over the limit of {limit}; {fix}")]
    TooLarge {
        what: String,
        requested: u64,
        limit: u64,
        fix: String,
    },
    /// An allocation larger than the memory this machine has available.
    #[error("{what} needs {} but {} is available; {fix}", crate::limits::bytes(*needed), crate::limits::bytes(*available))]
    OutOfMemory {
        what: String,
        needed: u64,
        available: u64,
        fix: String,
    },
    /// The object id does not name a live object.
    #[error("no object with id {0} in this scene (removed, or from another scene)")]
    NoSuchObject(u32),
    /// No GPU adapter was found.
    #[error("no GPU adapter: install Mesa's lavapipe (`apt-get install mesa-vulkan-drivers`) or use the CPU backend (`--backend cpu`, `Engine::cpu()`)")]
    NoAdapter,
    /// The device refused to be created with what the engine needs.
    #[error("could not create a GPU device: {0}")]
    RequestDevice(String),
    /// The GPU device was lost (driver reset, `destroy()`); create a new engine.
    #[error("the GPU device was lost ({0}); create a new Engine, or use the CPU backend")]
    DeviceLost(String),
    /// A GPU operation failed validation or ran out of memory.
    #[error("GPU error: {0}")]
    Gpu(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Error {
    /// A file error without a line number.
    pub fn load(path: impl std::fmt::Display, message: impl Into<String>) -> Error {
        Error::Load {
            path: path.to_string(),
            line: None,
            message: message.into(),
        }
    }

    /// A file error at a 1-based line.
    pub fn load_at(path: impl std::fmt::Display, line: usize, message: impl Into<String>) -> Error {
        Error::Load {
            path: path.to_string(),
            line: Some(line),
            message: message.into(),
        }
    }

    /// A parameter outside its range: `allowed` says what is allowed and what to change.
    pub fn param(
        name: &'static str,
        value: impl std::fmt::Display,
        allowed: impl Into<String>,
    ) -> Error {
        Error::InvalidParameter {
            name,
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }

    /// A size over its documented limit.
    pub fn too_large(
        what: impl Into<String>,
        requested: u64,
        limit: u64,
        fix: impl Into<String>,
    ) -> Error {
        Error::TooLarge {
            what: what.into(),
            requested,
            limit,
            fix: fix.into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
