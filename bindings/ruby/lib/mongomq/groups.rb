# frozen_string_literal: true

# The group listing (Queue#groups, over mq_groups_json): its page and rows, and its
# keyword options turned into the C shim's scalars.
module MongoMQ
  # One group as Queue#groups shows it: its lock, and its events counted (a frozen
  # Struct). Times are Time values (UTC) on the queue clock; durations Float seconds,
  # under the library's names.
  #
  # group (UTF-8 String); state (:ready, :leased, :parked or :paused, at the page's
  # now); paused (true or false; then state is :paused, whatever its lease or
  # schedule; also #paused?); priority (0..4, paused or not); attempts (deliveries of
  # its head so far); available_at (when it is due: the lease's deadline while held);
  # holder (the worker id of its lease, its last holder's once the lease ran out, or
  # nil); held_for_s (seconds since the current lease was taken; nil unless held);
  # lease_deadline (nil unless held); backlog (events in the group); head (the seq of
  # its oldest event, or nil); head_age_s (seconds since the head was published, as the
  # library reports it: two machines' clocks may make it a little negative; nil
  # without a head or its publish time).
  GroupInfo = Struct.new(:group, :state, :paused, :priority, :attempts, :available_at, :holder, :held_for_s,
                         :lease_deadline, :backlog, :head, :head_age_s, keyword_init: true) do
    def paused?
      paused
    end

    # @api private: one row of the C library's groups JSON.
    def self.from_json(obj)
      new(group: obj.fetch("group"), state: obj.fetch("state").to_sym, paused: obj.fetch("paused") == true,
          priority: obj.fetch("priority"), attempts: obj.fetch("attempts"),
          available_at: Check.to_time(obj["available_at"]), holder: obj["holder"],
          held_for_s: obj["held_for_s"]&.to_f, lease_deadline: Check.to_time(obj["lease_deadline"]),
          backlog: obj.fetch("backlog"), head: obj["head"], head_age_s: obj["head_age_s"]&.to_f).freeze
    end
  end

  # A page of Queue#groups (a frozen Struct): groups (GroupInfo values, in the
  # options' order), next (the cursor of the next page, for after:; nil on the last
  # page) and now (the queue clock the states were judged at, a Time).
  GroupsPage = Struct.new(:groups, :next, :now, keyword_init: true) do
    # @api private
    def self.parse(json)
      obj = JSON.parse(json)
      new(groups: obj.fetch("groups").map { |row| GroupInfo.from_json(row) }.freeze, next: obj["next"],
          now: Check.to_time(obj.fetch("now"))).freeze
    end
  end

  # Queue#groups' options as the C shim's scalars (mq_groups_opts), checked and named
  # as the caller named them.
  module GroupsOptions
    STATES = { ready: Raw::MQ_GROUP_READY, leased: Raw::MQ_GROUP_LEASED, parked: Raw::MQ_GROUP_PARKED,
               paused: Raw::MQ_GROUP_PAUSED }.freeze
    SORTS = { id: Raw::MQ_GROUPS_SORT_ID, due: Raw::MQ_GROUPS_SORT_DUE }.freeze
    INT_MAX = 2**31 - 1 # mq_groups_opts.min_attempts is a C int

    module_function

    # nil, [] or one state: a Symbol or String (:ready, :leased, :parked, :paused), or
    # an Array (any Enumerable) of them; as MQ_GROUP_* bits (0: every state).
    def states(value)
      list = case value
             when nil then []
             when Symbol, String then [value]
             when Enumerable then value.to_a
             else Check.fail!(:states, "a state or an Array of states", value)
             end
      list.reduce(0) do |bits, state|
        flag = (state.is_a?(Symbol) || state.is_a?(String)) && STATES[state.to_sym]
        bits | (flag || Check.fail!(:states, "#{STATES.keys.map(&:inspect).join(", ")} (one or an Array)", state))
      end
    end

    def sort(value)
      code = (value.is_a?(Symbol) || value.is_a?(String)) && SORTS[value.to_sym]
      code or Check.fail!(:sort, ":id or :due", value)
    end

    def min_attempts(value)
      Check.integer(value, :min_attempts)
      Check.fail!(:min_attempts, "0..#{INT_MAX}", value) unless value.between?(0, INT_MAX)
      value
    end

    # held_longer_than: / parked_beyond: nil (no filter) or seconds (0: no filter).
    def seconds(value, name)
      value.nil? ? 0.0 : Check.seconds(value, name)
    end

    # Queue#groups' keywords as mqs_groups_json's arguments after the queue.
    def to_c(states:, id_prefix:, min_attempts:, held_longer_than:, parked_beyond:, sort:, after:, limit:)
      [states(states), Check.optional_text(id_prefix, :id_prefix), min_attempts(min_attempts),
       seconds(held_longer_than, :held_longer_than), seconds(parked_beyond, :parked_beyond), sort(sort),
       Check.optional_text(after, :after), Check.page_limit(limit)]
    end
  end
  private_constant :GroupsOptions
end
