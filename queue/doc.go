// Package queue is ordersync's durable queue: NATS JetStream, either embedded
// in the process (nothing to install, JetStream files under the data
// directory) or an external NATS server or cluster.
//
// Two streams carry ordersync's messages:
//
//   - the events stream ("<prefix>.events.<account>", work-queue retention)
//     holds received webhooks until a worker acknowledges them after the
//     mirror committed. The receiver publishes with Nats-Msg-Id set to a hash
//     of the body, so a webhook the provider sends twice is stored once.
//   - the orders stream ("<prefix>.orders.>", limits retention) carries the
//     outgoing order events (the PAID trigger, status changes) to fulfilment
//     subscribers.
//
// # What an acknowledged publish survives
//
// A publish returns only after JetStream acknowledged it, and the webhook
// receiver answers 2xx only after that. What "acknowledged" survives depends
// on the embedded server's SyncPolicy (an external server has its own
// sync_interval setting with the same meaning):
//
//   - SyncDefault ("default"): every write reaches the operating system at
//     once, and is fsynced on JetStream's periodic timer (every two minutes).
//     It survives the process dying (kill -9, a crash, an OOM kill), not a
//     power loss or kernel panic, which can lose the last interval's writes.
//   - SyncAlways ("always"): every write is fsynced before it is
//     acknowledged. It survives a power loss too, at about a tenth of the
//     publish throughput.
//   - an interval such as "1s" (SyncEvery): like the default, but fsynced on
//     that period; a power loss loses at most about that much.
//
// A three-replica JetStream cluster (Config.Replicas = 3 against an external
// cluster) acknowledges only after a majority stored the write, so it
// survives the loss of a node without fsync on every write.
//
// # Supported servers
//
// An external server must be nats-server 2.9.10 or newer
// (OldestServerVersion, Debian 12's package; CheckServerVersion tells).
// CI runs the external-server tests against that release and against the
// current one the embedded server is built from (the nats-server/v2
// version in go.mod, see .ci/nats-current.sh). Nothing here relies on
// later features: leases expire through the bucket's MaxAge, not the
// per-message TTLs of 2.11.
//
// # Leader election
//
// Leader makes one process among several act for a role (the outbox relay,
// the dispatcher, the reconciler, the pruner): a lease in a JetStream key-value bucket, renewed every
// TTL/3 and released on stop, that another process takes over when it is
// released or, if the holder died, after the TTL.
//
// Consumers pull with Fetch batches, not the Messages iterator, which
// stalls under saturation.
package queue
