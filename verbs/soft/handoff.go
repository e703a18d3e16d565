package soft

// The hand-over of application memory to the provider.
//
// Posting a send is when an application hands memory to RDMA: it writes a
// buffer, then posts the Send that advertises it (or Reregisters the region
// that holds it); later the peer's request for that memory (an RDMA Read
// Request, or a Write into a region it was told about) arrives on a
// connection goroutine, which then reads or places into it. The happens-before
// between the application's writes and those accesses runs through the
// network: PostSend's system call sends what the peer answers, and the reader
// acts only on what its own system call received. The hardware and the
// kernel order that chain (the sending side's locks and system call publish
// the application's stores before the peer can have seen the advertisement;
// the receiving side's system call and locks come before its accesses); the
// compiler cannot move the application's stores past PostSend, an interface
// call, nor the reader's accesses before its system call.
//
// The Go memory model (and so the race detector) cannot see a chain through
// the kernel, however. So handOff (at every PostSend and Reregister) and
// takeOver (before every access to registered memory on the peer's behalf)
// state the edge for it: in a race build they are a release and an acquire
// on one process-wide atomic (handoff_race.go); otherwise they compile to
// nothing (handoff_norace.go), since a process-wide counter written by every
// post of every connection would cost each post a cache line shared by all
// processors, for an ordering the program already has. A posted receive needs
// neither: its buffer is placed into only after the reader takes the entry
// under the QP's lock.
