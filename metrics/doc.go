// Package metrics exports the project's counters to Prometheus. The core packages
// (oncrpc, rpcrdma, credits, verbs/soft) keep their own allocation-free counters,
// readable through their APIs (oncrpc.ProcStats, oncrpc.Server.Stats,
// oncrpc.TCPListener.Stats, rpcrdma.Listener.Stats, soft.Device.Stats,
// nfsserver.StatusStats) and know
// nothing of Prometheus; a Collector reads them when it is scraped. Serve runs the
// HTTP endpoint (/metrics, and /debug/pprof/ when asked) that nfsrdmad and rdmaconfig
// start with -metrics.
//
// Metric names (all prefixed rpcrdma_):
//
//	rpc_calls_total{program,version,procedure,transport,outcome}  calls answered, by outcome
//	rpc_call_duration_seconds{program,version,procedure,transport} server latency histogram
//	rpc_server_calls_total / rpc_server_garbage_total / rpc_server_system_errors_total / rpc_server_write_errors_total
//	transport_connections_accepted_total{transport}         transport="rdma" or "tcp"
//	transport_connections_closed_total{transport}
//	transport_connections_open{transport}
//	transport_connections_refused_total{transport}          past the connection limit
//	transport_connections_reaped_total{transport}           closed for idleness
//	rdma_calls_total{transport,chunks}                      chunks="none" or "read"
//	rdma_replies_total{transport,path}                      path="inline", "reply_chunk", "read_chunk"
//	rdma_write_chunks_total{transport}
//	rdma_read_bytes_total{transport} / rdma_write_bytes_total{transport}
//	rdma_errors_sent_total{transport,kind}                  kind="ERR_VERS" or "ERR_CHUNK"
//	rdma_credits_granted{transport} / rdma_credits_in_use{transport}
//	rdma_buffer_bytes{transport} / rdma_buffer_bytes_in_use{transport}  registered buffers for large messages; held by calls in flight
//	nfs_replies_total{procedure,status}                     NFSv3 replies by nfsstat3 (status="nfs3_ok", "nfs3err_noent", ...)
//	iwarp_terminates_total{provider,direction,layer}        direction="sent"/"received", layer="rdmap"/"ddp"/"llp"/"other"
//	rpc_bytes_in_flight / rpc_bytes_budget                  the memory budget in use by calls in progress, and its size (0: unbounded)
//	exports_reloads_total{result}                           result="success" or "failure": exports reloads (SIGHUP, nfsrdmad)
//	exports_last_reload_successful                          1 when the last reload succeeded (or none was asked for), 0 when it failed
//	exports_last_reload_success_timestamp_seconds           when the exports table in force was loaded (Unix seconds)
//
// and the Go runtime and process collectors of client_golang (go_*, process_*).
//
// The calls a ProcStats counts under oncrpc.OtherProc carry program, version,
// procedure and transport "other": the calls to programs, versions and procedures
// the server does not serve (outcome prog_unavail, prog_mismatch, proc_unavail),
// whose numbers a client makes up at will, and those past oncrpc.MaxProcKeys
// procedures.
package metrics
