// Package fake holds in-memory fakes of the root package's interfaces, for
// tests that are about a stage's logic and not about the database, the
// queue or the network: Store (the mirror), Queue (the events stream and
// its worker consumer), Upstream (the payment link service) and Endpoints
// (merchants' fulfilment endpoints, as an http.RoundTripper). A fake is
// kept honest by a suite its real counterpart passes too: Store passes
// store/storetest, as store.DB does; Queue passes TestQueueContract with
// the queue package on an embedded JetStream, Upstream
// TestUpstreamContract with paymentlink.Client against the simulator, and
// Endpoints TestEndpointsContract with an httptest server over loopback.
package fake
