//! What the example programs share with the studies: the loopback servers and their clients.

#[path = "studies/echo.rs"]
pub mod echo;
