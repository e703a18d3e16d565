// Package credits implements RPC-over-RDMA version 1 credit management (RFC 8166 §3.3.1,
// seed draft §3.3): the requester's credit window and the responder's grant policy.
//
// A credit is one RPC the requester may have outstanding on a connection: the responder
// promises a posted receive for it. The requester never has more calls (and RDMA_DONE
// messages it still owes) in flight than the responder last granted; it starts every
// connection with one credit (RFC 8166 §3.3.3) and follows the rdma_credit value of each
// reply, treating a grant of 0 as 1 so it can never deadlock, and capping the window at the
// number of credits it asked for (Window).
//
// The responder grants credits that follow its posted receives: never more than the
// receives a connection has posted, never 0 to a requester with nothing outstanding, and
// shared between connections by a configurable Policy (Server, Conn). A requester that
// sends more calls than it was granted is detected (Conn.Arrive reports Overrun) so the
// transport can answer those calls with an error, or disconnect a persistent offender,
// without letting it consume the upper layer's resources or stall other connections.
//
// # Sharing among active connections
//
// A grant cannot be taken back. The responder lowers a grant only through the
// rdma_credit of a later reply, and the lower value binds the requester only from then
// on (the calls it already has in flight stay within the older grant), so a connection
// that has stopped calling keeps what it was last granted for as long as it stays
// quiet: 1, the RFC 8166 §3.3.3 initial credit, for a connection that never called.
// Dividing the budget (Config.Total) by every open connection therefore punishes the
// clients that work for the ones that merely connected: 300 connections that finish
// connection setup and go idle would cut a working client's share of 256 to 1, and
// nothing the responder can do recovers those credits.
//
// The default policy, FairShare, divides Total among the active connections instead:
// those with calls outstanding or with a call within the last Config.ActiveWindow
// (State.Active). A connection joins the active set with its first call after a quiet
// spell, and leaves it when a sweep (Server.Sweep, run every ActiveWindow by a
// goroutine that exists only while some connection is active) finds it had no call
// since the previous sweep and none outstanding. So an idle connection costs a busy
// one nothing, and a connection that stops calling is reclaimed the only way the
// protocol allows: when it calls again, the reply carries the share of the moment,
// which binds the requester from the moment it arrives there. The responder cannot
// see that moment, so it counts each call against every grant that may have reached
// the requester by then: the messages reported Sent (from their Sends' completions)
// and those still in flight, each placed after as many replies as can have come
// before it (Conn). Until the lower grant binds, the sum of the grants in force may
// exceed Total (each is still capped by Config.PerConn and by the receives its
// connection has posted), which is why Total is a target that steers grants, not a
// reservation.
//
// The active set moves only when a connection starts or stops calling, not with every
// call: a call touches only its own connection's state (one mutex per connection,
// never held across connections), and the shared active count is an atomic changed on
// those transitions. Receives for calls are posted as the credits are used (the
// transport asks Conn.Grow), so the memory a connection pins follows what it was
// granted and used, not what it could have been granted.
//
// The package knows nothing of the wire format or of verbs; it only counts. Everything is
// safe for concurrent use, and the steady-state paths do not allocate.
package credits
