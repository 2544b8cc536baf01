package flow

import "context"

// MemberKey is the context key under which a worker's handler context
// answers the ID of the batch its task is a member of.
type MemberKey struct{}

// MemberOf returns the batch whose member task ctx runs, or "". A batch
// takes Adds from its own members after Close: it cannot finish while
// they run.
func MemberOf(ctx context.Context) string {
	id, _ := ctx.Value(MemberKey{}).(string)
	return id
}
