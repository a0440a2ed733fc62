//! The HTTP server under the mock provider and the fake iLink server.

/// A request's headers, names lower-cased.
pub(crate) fn headers_of<B>(req: &hyper::Request<B>) -> std::collections::HashMap<String, String> {
    req.headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_lowercase(),
                v.to_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Serves HTTP/1 on `listener`, one task per connection, with `handler`
/// answering each request (the mock provider and the fake iLink server).
pub(crate) fn serve_http<F, Fut, B>(
    listener: tokio::net::TcpListener,
    handler: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(hyper::Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<hyper::Response<B>, std::convert::Infallible>>
        + Send
        + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            // A response goes out as it is written: no delayed-ACK stall
            // (~40 ms) between a request's answer and the next request.
            let _ = stream.set_nodelay(true);
            let handler = handler.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(handler);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}
