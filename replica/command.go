package replica

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/textindex"
)

// command is one entry of the stream, decoded: a commit of inserts and
// deletes, an insert-if-new decision (ifNew; over shards, when more than
// one), or a setting kept (setting not nil).
type command struct {
	commit     engine.Commit
	ifNew      bool
	k          int
	similarity *float64
	shards     int
	setting    *setting
}

type setting struct {
	name  string
	value []byte
}

// encodeCommand is c as the stream's message (simhashdbv1.Command, the
// one definition of the log's entries).
func encodeCommand(c command) ([]byte, error) {
	var m simhashdbv1.Command
	if c.setting != nil {
		m.Kind = &simhashdbv1.Command_Setting{Setting: &simhashdbv1.SettingCommand{Name: c.setting.name, Value: c.setting.value}}
	} else if c.ifNew {
		m.Kind = &simhashdbv1.Command_InsertIfNew{InsertIfNew: &simhashdbv1.InsertIfNewCommand{
			Document: api.DocProto(c.commit.Insert[0]), K: uint32(c.k), Similarity: c.similarity, Shards: uint32(c.shards),
		}}
	} else {
		w := &simhashdbv1.WriteCommand{Delete: c.commit.Delete}
		for _, d := range c.commit.Insert {
			w.Insert = append(w.Insert, api.DocProto(d))
		}
		m.Kind = &simhashdbv1.Command_Write{Write: w}
	}
	return proto.Marshal(&m)
}

// decodeCommand is encodeCommand's inverse. A message that is not a
// command is refused: the stream holds something a node did not write.
func decodeCommand(b []byte) (command, error) {
	var m simhashdbv1.Command
	if err := proto.Unmarshal(b, &m); err != nil {
		return command{}, fmt.Errorf("not a command: %w", err)
	}
	switch kind := m.Kind.(type) {
	case *simhashdbv1.Command_Write:
		var c command
		for _, d := range kind.Write.GetInsert() {
			c.commit.Insert = append(c.commit.Insert, api.DocFromProto(d))
		}
		c.commit.Delete = kind.Write.GetDelete()
		return c, nil
	case *simhashdbv1.Command_InsertIfNew:
		x := kind.InsertIfNew
		if x.GetDocument() == nil {
			return command{}, fmt.Errorf("an insert-if-new command without its document")
		}
		return command{commit: engine.Commit{Insert: []engine.Doc{api.DocFromProto(x.GetDocument())}}, ifNew: true, k: int(x.GetK()), similarity: x.Similarity, shards: int(x.GetShards())}, nil
	case *simhashdbv1.Command_Setting:
		return command{setting: &setting{name: kind.Setting.GetName(), value: kind.Setting.GetValue()}}, nil
	}
	return command{}, fmt.Errorf("a command of no known kind")
}

// vote is one shard's part of an insert-if-new decision over shards (a
// simhashdbv1.Vote): its documents that keep the document out, verified
// when the command compares sketches, how many there are in all, or why
// the shard refused the command.
type vote struct {
	matches  []engine.Match
	verified []textindex.Match
	count    int
	refused  string
}

// encodeVote is v as the stream's message, holding no more of its
// matches than a message of max bytes takes (the nearest or most similar
// first; count keeps how many there are).
func encodeVote(v vote, max int64) ([]byte, error) {
	ps := api.MatchesProto(v.matches)
	if v.verified != nil {
		ps = api.VerifiedProto(v.verified)
	}
	for {
		b, err := proto.Marshal(&simhashdbv1.Vote{Matches: ps, Count: uint64(v.count), Refused: v.refused})
		if err != nil || int64(len(b)) <= max || len(ps) == 0 {
			return b, err
		}
		ps = ps[:len(ps)/2]
	}
}

// decodeVote is encodeVote's inverse; verified says whether the command
// compared sketches.
func decodeVote(b []byte, verified bool) (vote, error) {
	var m simhashdbv1.Vote
	if err := proto.Unmarshal(b, &m); err != nil {
		return vote{}, fmt.Errorf("not a vote: %w", err)
	}
	v := vote{count: int(m.GetCount()), refused: m.GetRefused()}
	if verified {
		v.verified = api.VerifiedFromProto(m.GetMatches())
	} else {
		v.matches = api.MatchesFromProto(m.GetMatches())
	}
	if v.count < len(m.GetMatches()) {
		return vote{}, fmt.Errorf("a vote of %d matches holding %d", v.count, len(m.GetMatches()))
	}
	return v, nil
}
