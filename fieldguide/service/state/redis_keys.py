"""The Redis layout of the shared conversation state: its key names, the Lua scripts that
change a conversation in one atomic step, and the lease and polling times (`redis.py` runs them)."""
from __future__ import annotations

from fieldguide.service.conversations import TURN_ENDS

LEASE_SECONDS = 5.0  # a turn whose replica stopped renewing for this long was interrupted
READ_BLOCK_MS = 1000  # a reader's XREAD waits this long before it looks at the turn's lease
LISTEN_MARK_SECONDS = 1.0  # readers mark the conversation as listened to this often
FINISH_POLL_SECONDS = 0.01  # after a turn's last event, how often a reader looks for its release
KEY_PREFIX = "fieldguide:"
TERMINAL_EVENTS = TURN_ENDS

STATE_UNAVAILABLE = "The conversation store (Redis) is not reachable right now. Please try again in a moment."

_APPEND = """
local running = redis.call('HGET', KEYS[1], 'running')
if not running then return -1 end
if ARGV[6] ~= '' and redis.call('HGET', KEYS[1], 'owner') ~= ARGV[6] then return -2 end
local id = redis.call('HINCRBY', KEYS[1], 'last_id', 1)
local frame = 'id: ' .. id .. '\\r\\nevent: ' .. ARGV[1] .. '\\r\\ndata: ' .. ARGV[2] .. '\\r\\n\\r\\n'
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[3], id .. '-0', 'f', frame)
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'ended_at', id)
end
if ARGV[6] ~= '' then
  redis.call('SET', KEYS[3], ARGV[6], 'PX', ARGV[7])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return id
"""

# The turn's claim is released only after its last event (`done`/`error`) and the tidying of
# its checkpoints, as with the other backends: a follow-up cannot overtake that tidying.
_FINISH = """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'running', '0', 'owner', '')
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[3], ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[2])
return 1
"""

_RESERVE = """
local running = redis.call('HGET', KEYS[1], 'running')
if not running then return -1 end
if running == '1' then return -2 end
local last = redis.call('HGET', KEYS[1], 'last_id')
redis.call('HSET', KEYS[1], 'running', '1', 'owner', ARGV[1], 'listened_at', ARGV[5], 'ended_at', '0')
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return tonumber(last)
"""

_INTERRUPT = """
if redis.call('HGET', KEYS[1], 'running') ~= '1' then
  redis.call('SREM', KEYS[4], ARGV[4])
  return 0
end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local ended = tonumber(redis.call('HGET', KEYS[1], 'ended_at') or '0')
local id = 0
if ended == 0 then  -- the turn's last event never came: say why, once
  id = redis.call('HINCRBY', KEYS[1], 'last_id', 1)
  local frame = 'id: ' .. id .. '\\r\\nevent: error\\r\\ndata: ' .. ARGV[1] .. '\\r\\n\\r\\n'
  redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], id .. '-0', 'f', frame)
end
redis.call('HSET', KEYS[1], 'running', '0', 'owner', '')
redis.call('SREM', KEYS[4], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return id
"""


def _errors():
    import redis

    return (redis.ConnectionError, redis.TimeoutError)


class Keys:
    def __init__(self, prefix: str = KEY_PREFIX) -> None:
        self.prefix = prefix
        self.index = prefix + "conversations"  # sorted set: conversation id by last activity
        self.running = prefix + "running"  # set: conversations with a turn claimed
        self.turn_index = prefix + "turns"  # sorted set: "<id>#<turn>" by start time
        self.feedback = prefix + "feedback"  # sorted set: feedback records by time

    def meta(self, cid: str) -> str:
        return f"{self.prefix}c:{cid}"

    def events(self, cid: str) -> str:
        return f"{self.prefix}c:{cid}:events"

    def lease(self, cid: str) -> str:
        return f"{self.prefix}c:{cid}:lease"

    def turns(self, cid: str) -> str:
        return f"{self.prefix}t:{cid}"
