# frozen_string_literal: true

module MongoMQ
  # What Queue#repair_counts returns: the automatic repairs a queue object ran (runs)
  # and the locks they re-created (fixed). A frozen Struct.
  RepairCounts = Struct.new(:runs, :fixed, keyword_init: true)
end
