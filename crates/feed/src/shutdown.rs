//! Graceful shutdown as a value: one signal, observed by every task.

use tokio::sync::watch;

/// Cloned into every task; [`Shutdown::trigger`] asks all of them to stop taking new work.
#[derive(Debug, Clone)]
pub struct Shutdown {
    tx: std::sync::Arc<watch::Sender<bool>>,
    rx: watch::Receiver<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    pub fn new() -> Shutdown {
        let (tx, rx) = watch::channel(false);
        Shutdown { tx: std::sync::Arc::new(tx), rx }
    }

    /// Ask every holder to stop taking new work.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    pub fn is_triggered(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once shutdown is triggered (at once if it already was).
    pub async fn wait(&self) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|stop| *stop).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_clone_sees_the_trigger() {
        let a = Shutdown::new();
        let b = a.clone();
        assert!(!b.is_triggered());
        let waiter = tokio::spawn(async move { b.wait().await });
        a.trigger();
        waiter.await.unwrap();
        assert!(a.clone().is_triggered());
    }
}
