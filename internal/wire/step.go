package wire

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Step is one finished step of a task's handler (worker.Step): its name,
// when it finished, and the msgpack of the value it returned.
type Step struct {
	Name   string `msgpack:"n"`
	At     int64  `msgpack:"t"` // unix ms
	Result []byte `msgpack:"v"`
}

// Steps are a task's finished steps in the order they first finished, as
// stored in keys.Steps: a msgpack array of Step maps.
type Steps []Step

// Find returns the step named name, or nil.
func (s Steps) Find(name string) *Step {
	for i := range s {
		if s[i].Name == name {
			return &s[i]
		}
	}
	return nil
}

// Size is the bytes of the steps' results: what the result cap bounds.
func (s Steps) Size() int {
	n := 0
	for _, st := range s {
		n += len(st.Result)
	}
	return n
}

// EncodeSteps returns the stored form of s.
func EncodeSteps(s Steps) ([]byte, error) {
	b, err := msgpack.Marshal([]Step(s))
	if err != nil {
		return nil, fmt.Errorf("encode %d steps: %w", len(s), err)
	}
	return b, nil
}

// DecodeSteps reads what EncodeSteps wrote; nil or empty bytes are no
// steps.
func DecodeSteps(b []byte) (Steps, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var s []Step
	if err := Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode steps (%d bytes): %w", len(b), err)
	}
	return s, nil
}
