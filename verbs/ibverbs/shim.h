// shim.h: C shims for package ibverbs. libibverbs' data-path verbs
// (ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) are static
// inline functions in <infiniband/verbs.h>, which cgo cannot call; these
// wrappers also turn arrays of flat work requests into one linked list so a
// single cgo call posts a whole batch.
#ifndef GO_RPCRDMA_IBVERBS_SHIM_H
#define GO_RPCRDMA_IBVERBS_SHIM_H

#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

// Flat send work request: SGEs are sges[sge_off : sge_off+nsge] of the
// array passed alongside.
struct gsend {
	uint64_t wr_id;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t invalidate_rkey;
	uint32_t sge_off;
	uint16_t nsge;
	uint8_t opcode;     // enum ibv_wr_opcode
	uint8_t send_flags; // enum ibv_send_flags (low byte)
};

// Flat receive work request.
struct grecv {
	uint64_t wr_id;
	uint32_t sge_off;
	uint32_t nsge;
};

// Flat work completion.
struct gwc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t wc_flags;
	uint32_t invalidated_rkey;
	uint32_t pad;
};

// Flat connection-manager event (copied before rdma_ack_cm_event).
// responder_resources and initiator_depth are ev->param.conn's as rdma_cm
// reports them, from the receiver's side: in a connection request they are
// the peer's ORD and IRD, in that order (rdma_get_cm_event(3)).
struct gcmev {
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	int event;
	int status;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t private_data_len;
	uint8_t pad;
	uint8_t private_data[256];
};

// Flat asynchronous event (copied before ibv_ack_async_event).
struct gasync {
	int type;    // enum ibv_event_type
	int port;    // for port events
	void *cq;    // for IBV_EVENT_CQ_ERR
	void *qp;    // for QP events
};

// Batch limit of one shim call (the Go side splits longer batches).
#define GSHIM_BATCH 64

int gshim_post_send(struct ibv_qp *qp, struct gsend *wrs, int n, struct ibv_sge *sges, int *bad);
int gshim_post_recv(struct ibv_qp *qp, struct grecv *wrs, int n, struct ibv_sge *sges, int *bad);
int gshim_poll_cq(struct ibv_cq *cq, int n, struct gwc *out);
int gshim_req_notify_cq(struct ibv_cq *cq);
int gshim_get_cq_event(struct ibv_comp_channel *ch);
int gshim_get_cm_event(struct rdma_event_channel *ch, struct gcmev *out);
void gshim_copy_cm_event(const struct rdma_cm_event *ev, struct gcmev *out);
int gshim_set_nonblock(int fd);
int gshim_get_async_event(struct ibv_context *ctx, struct gasync *out);
int gshim_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
	uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t max_send_sge, uint32_t max_recv_sge);
int gshim_connect(struct rdma_cm_id *id, const void *pd, int pdlen, int ird, int ord, int accept);
int gshim_qp_to_error(struct ibv_qp *qp);
int gshim_query_rd_atomic(struct ibv_qp *qp, int *ord, int *ird);
int gshim_resolve_addr(struct rdma_cm_id *id, const char *host, const char *port, int timeout_ms);
int gshim_bind_addr(struct rdma_cm_id *id, const char *host, const char *port);
int gshim_local_port(struct rdma_cm_id *id);
int gshim_addr_string(struct rdma_cm_id *id, int peer, char *buf, int len);
const char *gshim_dev_name(struct ibv_context *ctx);
int gshim_transport(struct ibv_context *ctx);
int gshim_query_device(struct ibv_context *ctx, int *max_qp, int *max_qp_wr, int *max_sge, int *max_cq,
	int *max_cqe, int *max_mr, int *max_qp_rd_atom, int *max_qp_init_rd_atom, uint64_t *max_mr_size, int *phys_port_cnt);
int gshim_port_state(struct ibv_context *ctx, int port, int *state);

#endif
