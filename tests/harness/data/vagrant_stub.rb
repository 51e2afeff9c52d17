# Loads a Vagrantfile with a recording stand-in for Vagrant's configuration
# objects and prints every setting it made as JSON, so tests can check what the
# Vagrantfile asks for without Vagrant installed.
#   ruby vagrant_stub.rb Vagrantfile  ->  {"vm.box": "...", "provider(virtualbox).cpus": 4, ...}
require "json"

class Recorder < BasicObject
  def initialize(path, log)
    @path = path
    @log = log
  end

  def method_missing(name, *args, **kw, &blk)
    n = name.to_s
    if n.end_with?("=")
      @log[(@path + [n.chomp("=")]).join(".")] = args[0]
      return args[0]
    end
    key = (@path + ["#{n}(#{args.map(&:to_s).join(',')})"]).join(".")
    if blk  # provider "virtualbox" do |vb, override| ... end
      @log[key] = kw
      blk.call(::Recorder.new([key], @log), ::Recorder.new(["override:#{args.join(',')}"], @log))
      return nil
    end
    return ::Recorder.new(@path + [n], @log) if args.empty? && kw.empty?
    @log[key] = kw
    nil
  end

  def respond_to_missing?(*) = true
end

LOG = {}
module Vagrant
  def self.configure(_version)
    yield Recorder.new([], LOG)
  end
end

load ARGV.fetch(0)
puts JSON.generate(LOG)
