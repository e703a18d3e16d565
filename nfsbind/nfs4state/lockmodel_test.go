package nfs4state

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// lockModel is a byte-by-byte reference for one lock-owner's locks on a file: cells 0 to
// 63 are bytes, cell 64 stands for every byte from 64 to the end of the file.
type lockModel [65]uint8 // 0 unlocked, 1 read, 2 write

const modelCells = 65

func modelSpan(off, length uint64) (lo, hi int) {
	if length == toEOF {
		return int(off), modelCells - 1
	}
	return int(off), int(off + length - 1)
}

// ranges returns the model as the Manager should hold it: maximal runs of one type.
func (lm *lockModel) ranges() []lockRange {
	var out []lockRange
	for i := 0; i < modelCells; {
		if lm[i] == 0 {
			i++
			continue
		}
		j := i
		for j+1 < modelCells && lm[j+1] == lm[i] {
			j++
		}
		end := uint64(j)
		if j == modelCells-1 {
			end = toEOF
		}
		out = append(out, lockRange{start: uint64(i), end: end, write: lm[i] == 2})
		i = j + 1
	}
	return out
}

// TestLocksAgainstModel runs random LOCK, LOCKU and LOCKT requests of three lock-owners
// (two clients) and checks each answer and the resulting ranges against a byte-by-byte
// model of POSIX locking.
func TestLocksAgainstModel(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	a, _ := establish(t, m, "a")
	b, _ := establish(t, m, "b")
	f := FileKey{Ino: 9}
	type owner struct {
		client uint64
		name   string
		open   nfs4.Stateid4
		lock   nfs4.Stateid4
		model  lockModel
	}
	owners := []*owner{{client: a, name: "a1"}, {client: a, name: "a2"}, {client: b, name: "b1"}}
	owners[0].open = open(t, m, a, "oa", f, nfs4.ShareAccessBoth, 0)
	owners[1].open = owners[0].open
	owners[2].open = open(t, m, b, "ob", f, nfs4.ShareAccessBoth, 0)

	rng := rand.New(rand.NewSource(1))
	randomRange := func() (uint64, uint64) {
		off := uint64(rng.Intn(64))
		if rng.Intn(4) == 0 {
			return off, toEOF
		}
		return off, uint64(1 + rng.Intn(64-int(off)))
	}
	conflicts := func(self *owner, lo, hi int, write bool) bool {
		for _, o := range owners {
			if o == self {
				continue
			}
			for i := lo; i <= hi; i++ {
				if o.model[i] == 2 || o.model[i] == 1 && write {
					return true
				}
			}
		}
		return false
	}
	denied, granted := 0, 0
	for step := 0; step < 3000; step++ {
		o := owners[rng.Intn(len(owners))]
		off, length := randomRange()
		lo, hi := modelSpan(off, length)
		write := rng.Intn(2) == 0
		typ := nfs4.ReadLT
		if write {
			typ = nfs4.WriteLT
		}
		switch rng.Intn(3) {
		case 0, 1: // LOCK
			args := &LockArgs{ClientID: o.client, File: f, Type: typ, Offset: off, Length: length}
			if o.lock == (nfs4.Stateid4{}) {
				args.NewLockOwner, args.OpenStateid, args.Owner = true, o.open, []byte(o.name)
			} else {
				args.LockStateid = o.lock
			}
			sid, d, st := m.Lock(args)
			if conflicts(o, lo, hi, write) {
				if st != nfs4.ErrDenied || d == nil {
					t.Fatalf("step %d: LOCK %s %d+%d: %v, want NFS4ERR_DENIED", step, o.name, off, length, st)
				}
				dlo, dhi := modelSpan(d.Offset, d.Length)
				if dhi < lo || dlo > hi {
					t.Fatalf("step %d: denied by %+v, which does not overlap %d..%d", step, d, lo, hi)
				}
				denied++
				continue
			}
			if st != nfs4.OK {
				t.Fatalf("step %d: LOCK %s %d+%d: %v", step, o.name, off, length, st)
			}
			o.lock = sid
			for i := lo; i <= hi; i++ {
				o.model[i] = 1
				if write {
					o.model[i] = 2
				}
			}
			granted++
		case 2:
			if rng.Intn(2) == 0 || o.lock == (nfs4.Stateid4{}) { // LOCKT
				d, st := m.LockT(o.client, f, typ, off, length, []byte(o.name))
				if c := conflicts(o, lo, hi, write); c != (st == nfs4.ErrDenied) || c != (d != nil) {
					t.Fatalf("step %d: LOCKT %s %d+%d: %v, model conflict %v", step, o.name, off, length, st, c)
				}
				continue
			}
			sid, st := m.LockU(o.client, o.lock, f, typ, off, length)
			if st != nfs4.OK {
				t.Fatalf("step %d: LOCKU: %v", step, st)
			}
			o.lock = sid
			for i := lo; i <= hi; i++ {
				o.model[i] = 0
			}
		}
		for _, o := range owners {
			var got []lockRange
			m.mu.Lock()
			if lo := m.clients[o.client].lockOwners[o.name]; lo != nil {
				if st := lo.stateids[f]; st != nil {
					got = append(got, st.ranges...)
				}
			}
			m.mu.Unlock()
			if w := o.model.ranges(); !reflect.DeepEqual(got, w) {
				t.Fatalf("step %d: owner %s holds %v, model %v", step, o.name, got, w)
			}
		}
	}
	if denied < 100 || granted < 100 {
		t.Fatalf("only %d denied and %d granted locks: the test does not exercise both", denied, granted)
	}
}
