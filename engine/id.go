package engine

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var (
	idMu   sync.Mutex
	idLast struct {
		ms   uint64
		rand [10]byte
	}
)

// NewID returns a ULID: 26 characters, lexically sortable by creation time
// and monotonic within this process.
func NewID() string { return newIDAt(time.Now()) }

func newIDAt(t time.Time) string {
	ms := uint64(t.UnixMilli())
	idMu.Lock()
	if ms <= idLast.ms {
		// Same (or earlier) millisecond: increment the random part so ids
		// stay strictly increasing.
		ms = idLast.ms
		for i := len(idLast.rand) - 1; i >= 0; i-- {
			idLast.rand[i]++
			if idLast.rand[i] != 0 {
				break
			}
		}
	} else {
		idLast.ms = ms
		_, _ = rand.Read(idLast.rand[:])
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], ms<<16)
	copy(b[6:], idLast.rand[:])
	idMu.Unlock()
	return encodeULID(b)
}

func encodeULID(b [16]byte) string {
	// 128 bits as 26 base32 digits, the first carrying 3 bits.
	var out [26]byte
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}
