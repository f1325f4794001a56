//! What the example programs share with the studies: the loopback servers and their clients.

pub mod echo;
