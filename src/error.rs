/// Everything that can go wrong, each with what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A mesh file could not be read or parsed.
    #[error("{path}: {message}")]
    Load { path: String, message: String },
    /// Bad numbers or indices from the caller; the message names the element and the fix.
    #[error("{0}")]
    InvalidInput(String),
    /// A query had a NaN or infinite coordinate.
    #[error(
        "query {index} has a non-finite coordinate ({what}); pass finite coordinates in metres"
    )]
    NonFiniteQuery { index: usize, what: &'static str },
    /// Something exceeds a hard limit.
    #[error("{what} exceeds the limit of {limit}; split the input")]
    TooLarge { what: &'static str, limit: u64 },
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

pub type Result<T, E = Error> = std::result::Result<T, E>;
