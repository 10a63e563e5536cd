# frozen_string_literal: true

module MongoMQ
  # @api private
  # What every object over a C handle shares. @raw is the extension's owner of the C
  # object (ext/mongomq_raw): it frees the object exactly once, at #close or when the
  # GC collects it, and every other call on it after #close raises ClosedError.
  module RawHandle
    # Releases the C object (what that means is said by each class). Closing twice
    # does nothing.
    def close
      Raw.mqr_close(@raw)
      nil
    end

    def closed?
      Raw.mqr_closed(@raw)
    end

    # @api private
    def raw_handle
      @raw
    end
  end
  private_constant :RawHandle
end
