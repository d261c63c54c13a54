// The CORBA test servant: one Svc::Pm object in omniORB's root POA, bound in the NameService under
// "svc.test/pm.object" (and "forward.test" to an object that answers every call with
// LOCATION_FORWARD to the real one, and "loop.test" to one that forwards to itself); writes "PM <IOR>", "FWD <IOR>" and "READY" to the file named
// by its last argument (stdout when there is none) once it serves.
// Usage: servant -ORBInitRef NameService=corbaloc:iiop:127.0.0.1:<port>/NameService [omniORB options] [ior-file]
#include <fstream>
#include <iostream>
#include <cstdio>
#include <map>
#include <string>
#include <vector>
#include <omniORB4/CORBA.h>
#include <omniORB4/Naming.hh>
#include "svc.hh"

class PmImpl : public POA_Svc::Pm {
 public:
  Svc::CounterList* counters(const char* ne, CORBA::Long count) {
    Svc::CounterList_var out = new Svc::CounterList;
    out->length(count < 0 ? 0 : count);
    for (CORBA::Long i = 0; i < count; i++) {
      std::string name = std::string(ne) + ".c" + std::to_string(i);
      out[i].name = CORBA::string_dup(name.c_str());
      out[i].value = (CORBA::LongLong)i * 1000 + (i >= 2 ? (CORBA::LongLong)9007199254740992LL : 0);
    }
    return out._retn();
  }
  char* version() { return CORBA::string_dup("svc-test-servant 1.0 (omniORB)"); }
  CORBA::Long add(CORBA::Long a, CORBA::Long b) { return a + b; }
  void fail() { throw Svc::Refused("refused on purpose", 7); }
  // omniORB dispatches calls on several threads: the store is guarded.
  void put(const char* channel, const char* body) {
    omni_mutex_lock l(mu_);
    store_[channel].push_back(body);
  }
  Svc::StringList* take(const char* channel) {
    omni_mutex_lock l(mu_);
    takes_[channel]++;
    std::vector<std::string>& v = store_[channel];
    Svc::StringList_var out = new Svc::StringList;
    out->length(v.size());
    for (size_t i = 0; i < v.size(); i++) out[i] = CORBA::string_dup(v[i].c_str());
    v.clear();
    return out._retn();
  }
  CORBA::Long takes(const char* channel) {
    omni_mutex_lock l(mu_);
    return takes_[channel];
  }
  Svc::Sample* echo(const Svc::Sample& s) { return new Svc::Sample(s); }

 private:
  std::map<std::string, std::vector<std::string> > store_;
  std::map<std::string, CORBA::Long> takes_;
  omni_mutex mu_;
};

// Every call is forwarded (GIOP LOCATION_FORWARD) to the real object.
class ForwardImpl : public POA_Svc::Pm {
 public:
  explicit ForwardImpl(CORBA::Object_ptr to) : to_(CORBA::Object::_duplicate(to)) {}
  void forwardTo(CORBA::Object_ptr to) { to_ = CORBA::Object::_duplicate(to); }
  Svc::CounterList* counters(const char*, CORBA::Long) { go(); return 0; }
  char* version() { go(); return 0; }
  CORBA::Long add(CORBA::Long, CORBA::Long) { go(); return 0; }
  void fail() { go(); }
  void put(const char*, const char*) { go(); }
  Svc::StringList* take(const char*) { go(); return 0; }
  CORBA::Long takes(const char*) { go(); return 0; }
  Svc::Sample* echo(const Svc::Sample&) { go(); return 0; }

 private:
  void go() { throw omniORB::LOCATION_FORWARD(CORBA::Object::_duplicate(to_)); }
  CORBA::Object_var to_;
};

static CosNaming::NamingContext_ptr context(CosNaming::NamingContext_ptr parent, const char* id, const char* kind) {
  CosNaming::Name n;
  n.length(1);
  n[0].id = id;
  n[0].kind = kind;
  try {
    return parent->bind_new_context(n);
  } catch (CosNaming::NamingContext::AlreadyBound&) {
    CORBA::Object_var o = parent->resolve(n);
    return CosNaming::NamingContext::_narrow(o);
  }
}

static void bind(CosNaming::NamingContext_ptr ctx, const char* id, const char* kind, CORBA::Object_ptr obj) {
  CosNaming::Name n;
  n.length(1);
  n[0].id = id;
  n[0].kind = kind;
  ctx->rebind(n, obj);
}

int main(int argc, char** argv) {
  try {
    CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
    CORBA::Object_var poaObj = orb->resolve_initial_references("RootPOA");
    PortableServer::POA_var poa = PortableServer::POA::_narrow(poaObj);
    PmImpl* pm = new PmImpl;
    PortableServer::ObjectId_var pmId = poa->activate_object(pm);
    CORBA::Object_var pmRef = poa->id_to_reference(pmId);
    ForwardImpl* fwd = new ForwardImpl(pmRef);
    PortableServer::ObjectId_var fwdId = poa->activate_object(fwd);
    CORBA::Object_var fwdRef = poa->id_to_reference(fwdId);
    // An object that forwards to itself: a forwarding loop.
    ForwardImpl* loop = new ForwardImpl(CORBA::Object::_nil());
    PortableServer::ObjectId_var loopId = poa->activate_object(loop);
    CORBA::Object_var loopRef = poa->id_to_reference(loopId);
    loop->forwardTo(loopRef);

    CORBA::Object_var nsObj = orb->resolve_initial_references("NameService");
    CosNaming::NamingContext_var root = CosNaming::NamingContext::_narrow(nsObj);
    CosNaming::NamingContext_var test = context(root, "svc", "test");
    bind(test, "pm", "object", pmRef);
    bind(root, "forward", "test", fwdRef);
    bind(root, "loop", "test", loopRef);

    PortableServer::POAManager_var mgr = poa->the_POAManager();
    mgr->activate();
    CORBA::String_var pmIor = orb->object_to_string(pmRef);
    CORBA::String_var fwdIor = orb->object_to_string(fwdRef);
    if (argc > 1) {
      std::string tmp = std::string(argv[argc - 1]) + ".tmp";
      {
        std::ofstream f(tmp.c_str());
        f << "PM " << pmIor << "\nFWD " << fwdIor << "\nREADY" << std::endl;
      }
      std::rename(tmp.c_str(), argv[argc - 1]);
    } else {
      std::cout << "PM " << pmIor << "\nFWD " << fwdIor << "\nREADY" << std::endl;
    }
    orb->run();
  } catch (CORBA::SystemException& e) {
    std::cerr << "servant: CORBA system exception " << e._name() << " minor " << e.minor() << std::endl;
    return 1;
  } catch (CORBA::Exception& e) {
    std::cerr << "servant: CORBA exception " << e._name() << std::endl;
    return 1;
  }
  return 0;
}
