//! Every path the facade promises resolves to the crate that implements it.

#[test]
fn oneshot_and_block_on_resolve() {
    let (tx, rx) = bridge::oneshot::channel::<u8>();
    let _: Result<(), bridge::oneshot::SendError<u8>> = tx.send(1);
    let _: Result<u8, bridge::oneshot::RecvError> = bridge::block_on(rx);
    let _: Option<bridge::oneshot::TryRecvError> = None;
    let _: Option<bridge::oneshot::RecvTimeoutError> = None;
    let _: Option<bridge::oneshot::Receiver<u8>> = None::<bridge_core::oneshot::Receiver<u8>>;
}
