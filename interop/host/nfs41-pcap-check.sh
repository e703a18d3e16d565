#!/usr/bin/env bash
# nfs41-pcap-check.sh PCAP [PORT]: judge a capture of NFSv4.1 over RPC-over-RDMA over siw
# (iWARP: MPA/DDP/RDMAP on TCP PORT, default 20049) with Wireshark's own dissectors (tshark on
# the host), so the verdict rests on a reading of the wire that is not ours:
#   1. tshark decodes it without malformed frames or error-level expert info, with one
#      exception, counted and named: Wireshark 4.0's rpcordma re-dissects a READ reply with
#      the write-chunk data it reassembled from the RDMA Writes, and for data whose length is
#      not a multiple of 4 it leaves out the XDR pad the responder does not write (RFC 8166
#      §3.4.6) and then reports the reply malformed.  Newer Wireshark adds the pad
#      (add_iwarp_padding in packet-rpcrdma.c).  A second exception: a Send that arrived in
#      several DDP segments (an untagged message cut at a TCP segment boundary, which DDP
#      allows and siw does for any Send larger than its FPDU) makes 4.0's rpcordma fail an
#      internal assertion on the last segment, which Wireshark itself reports as a
#      "Dissector bug".  Any other malformed frame fails the check.
#   2. The NFSv4 COMPOUND operations of the session appear (nfs.opcode): SEQUENCE,
#      EXCHANGE_ID, CREATE_SESSION, OPEN, CLOSE, READ, WRITE, READDIR, LOCK.
#   3. The RFC 8267 binding on the wire, calls and replies matched by XID:
#      - READ: every READ call offers a write chunk, and every READ reply that answers one
#        returns its data through it (a non-empty write list), 8 MiB - 1 bytes at least;
#        a reply whose Send is one of the cut Sends of exception 2 cannot be read (the
#        dissector fails on it), so up to that many READ replies may go uncounted, and
#        the check says how many did;
#      - WRITE: WRITE calls carry their data in read chunks, 8 MiB - 1 bytes at least (small
#        WRITEs may go inline);
#      - READDIR: every READDIR call offers a reply chunk and at least one reply comes back
#        RDMA_NOMSG through it;
#      - no RDMA_ERROR.
# tshark runs two-pass (-2): one-pass, the reassembled READ replies are dissected before the
# RDMA Writes they need are known, and every one of them shows as malformed.  iWARP has no
# port: Wireshark's MPA dissector is a TCP heuristic only (iwarp_mpa is not offered to
# decode-as, "-d tcp.port==20049,iwarp_mpa" is refused).  The heuristic, on by default and
# named here with --enable-heuristic iwarp_mpa_tcp, recognises a connection by its MPA Request and Reply
# ("MPA ID Req Frame"/"MPA ID Rep Frame"), so the capture must begin before the mount.
# Prints what it counted; exit status 0 only if every rule held.
set -uo pipefail
PCAP=${1:?usage: nfs41-pcap-check.sh PCAP [PORT]}
PORT=${2:-20049}
command -v tshark >/dev/null || { echo "tshark not installed (apt-get install tshark)"; exit 2; }
[[ -s "$PCAP" ]] || { echo "no capture: $PCAP"; exit 1; }
TS=(tshark -2 -n -r "$PCAP" --enable-heuristic iwarp_mpa_tcp)
ERR=$(mktemp); NSEG=$(mktemp); trap 'rm -f "$ERR" "$NSEG"' EXIT
"${TS[@]}" -c 1 > /dev/null 2> "$ERR" || { cat "$ERR"; exit 2; }
bad=0
fail() { echo "FAIL: $*"; bad=1; }
echo "$(tshark --version 2>/dev/null | head -1); $(capinfos -M -c "$PCAP" 2>/dev/null | awk -F: '/Number of packets/{gsub(/ /,"",$2); print $2}') frames in $PCAP"

# 1. malformed frames and error-level expert info (awk, not read: a tab-separated read
# would merge empty fields)
"${TS[@]}" -Y '_ws.malformed || _ws.expert.severity >= error' -T fields -E occurrence=a \
  -e frame.number -e tcp.srcport -e rpcordma.writes_count -e rpcordma.rdma_length -e nfs.read.data_length -e _ws.expert.message \
  -e iwarp_ddp.tagged_flag -e iwarp_ddp.last_flag -e iwarp_ddp.mo 2> "$ERR" |
awk -F'\t' -v port="$PORT" -v nsegfile="$NSEG" '
  function last(s) { sub(/.*,/, "", s); return s }
  { total++; wl = $3; sub(/,.*/, "", wl); d = $5; sub(/,.*/, "", d)
    # a READ reply (from the server) with one write chunk whose data length is not a multiple of 4
    if ($2 == port && wl == 1 && d != "" && d % 4 != 0 && $6 ~ /Malformed/) { known++; next }
    # Wireshark 4.0 reassembling a Send that came in several DDP segments: the frame holds
    # the last segment (untagged, L set, message offset > 0) and rpcordma fails an internal
    # assertion ("Dissector bug", Wireshark labelling its own failure, not the input).
    if (last($7) == 0 && last($8) == 1 && last($9) > 0 && $6 ~ /tvbuff\.c.*failed assertion/) { nseg++; next }
    if (bad < 20) printf "FAIL: frame %s: %s (write list %s, rdma lengths %s, read data %s)\n", $1, ($6 == "" ? "malformed" : $6), $3, $4, $5
    bad++ }
  END { printf "malformed or error frames: %d; of them READ replies with unaligned write-chunk data (the Wireshark 4.0 pad limitation): %d; Sends in several DDP segments (Wireshark 4.0 rpcordma dissector bug): %d\n", total, known, nseg
        print nseg + 0 > nsegfile
        if (bad > 20) printf "FAIL: ... and %d more\n", bad - 20
        exit bad > 0 }' || bad=1
# Where tshark loses the MPA framing, it reads payload bytes as FPDU headers: DDP or RDMAP
# versions other than 1, or a Terminate nobody sent.  Name the first such frame per side.
"${TS[@]}" -Y 'iwarp_ddp.dv != 1 || iwarp_rdma.version != 1 || iwarp_rdma.opcode == 7 || iwarp_rdma.opcode > 11' \
  -T fields -e frame.number -e tcp.srcport -e tcp.stream 2>/dev/null |
awk -F'\t' -v port="$PORT" '!seen[$3 "/" $2]++ { printf "FAIL: tshark lost the MPA framing of TCP stream %s (%s side) at frame %s: FPDU headers read from payload bytes from there on\n", $3, ($2 == port ? "server" : "client"), $1; f = 1 }
  END { exit f }' || bad=1

# 2. COMPOUND operations
ops=$("${TS[@]}" -Y nfs.opcode -T fields -E occurrence=a -e nfs.opcode 2>/dev/null | tr ',' '\n' | sort -n | uniq -c | awk '{printf "%s:%s ", $2, $1}')
echo "NFSv4 operations seen (opcode:count): $ops"
for op in 53:SEQUENCE 42:EXCHANGE_ID 43:CREATE_SESSION 18:OPEN 4:CLOSE 25:READ 38:WRITE 26:READDIR 12:LOCK; do
  [[ " $ops" == *" ${op%%:*}:"* ]] || fail "no ${op#*:} operation in the capture"
done

# 3. chunks, calls and replies joined by XID; one line per RPC-over-RDMA message or RPC
nseg=$(cat "$NSEG" 2>/dev/null); nseg=${nseg:-0}
"${TS[@]}" -Y 'rpcordma || rpc' -T fields -E occurrence=a -E separator=/t \
  -e tcp.srcport -e rpcordma.xid -e rpcordma.msg_type -e rpcordma.reads_count -e rpcordma.writes_count \
  -e rpcordma.reply_count -e rpcordma.rdma_length -e rpc.xid -e rpc.msgtyp -e nfs.main_opcode 2>/dev/null |
awk -F'\t' -v port="$PORT" -v nseg="$nseg" '
  function first(s) { sub(/,.*/, "", s); return s }
  function sum(s,   n, a, i, t) { n = split(s, a, ","); t = 0; for (i = 1; i <= n; i++) t += a[i]; return t }
  {
    fromsrv = ($1 == port)
    x = first($2)
    if (x != "") {                       # an RPC-over-RDMA header
      mt = first($3)
      if (mt == 4) errors++
      if (!fromsrv) { rd[x] = first($4); wr[x] = first($5); rp[x] = first($6); rdlen[x] = ($4 > 0) ? sum($7) : 0 }
      else { rmt[x] = mt; rwl[x] = first($5); rwlen[x] = (first($5) > 0) ? sum($7) : 0 }
    }
    rx = first($8)
    if (rx != "" && first($9) == 0 && first($10) != "") op[rx] = first($10)
  }
  END {
    for (x in op) {
      o = op[x]
      if (o == 25) {
        reads++
        if (wr[x] > 0) { rwc++; if (x in rwl) { if (rwl[x] > 0) { rused++; rbytes += rwlen[x] } else rinline++ } }
      } else if (o == 38) {
        writes++
        if (rd[x] > 0) { wrc++; wbytes += rdlen[x] }
      } else if (o == 26) {
        dirs++
        if (rp[x] > 0) drc++
        if (rmt[x] == 1) dnomsg++
      }
    }
    printf "READ: %d calls, %d offered a write chunk, %d replies used it (%d bytes placed), %d answered inline\n", reads, rwc, rused, rbytes, rinline
    printf "WRITE: %d calls, %d with data in a read chunk (%d bytes)\n", writes, wrc, wbytes
    printf "READDIR: %d calls, %d offered a reply chunk, %d replies RDMA_NOMSG\n", dirs, drc, dnomsg
    printf "RDMA_ERROR: %d\n", errors
    big = 8388607; f = 0
    # READ replies the dissector could not read (a cut Send, exception 2 above): neither
    # answered inline nor seen using the chunk; at most one per cut Send.
    hidden = rwc - rused - rinline
    if (hidden > 0 && hidden <= nseg) printf "READ replies not readable by tshark (their Send was cut, the rpcordma dissector bug): %d\n", hidden
    else hidden = 0
    if (reads == 0 || rwc != reads || rused + hidden != rwc || rbytes < big) { print "FAIL: READ data not all placed by write chunks (want every READ to offer one, every reply to use it, >= " big " bytes)"; f = 1 }
    if (wrc == 0 || wbytes < big) { print "FAIL: WRITE data not carried by read chunks (want >= " big " bytes)"; f = 1 }
    if (dirs == 0 || drc != dirs || dnomsg == 0) { print "FAIL: READDIR replies not sent by reply chunk (want every call to offer one, some RDMA_NOMSG replies)"; f = 1 }
    if (errors > 0) { print "FAIL: RDMA_ERROR on the wire"; f = 1 }
    exit f
  }' || bad=1
[[ $bad == 0 ]] && echo "pcap check: ok" || echo "pcap check: FAILED"
exit $bad
