#include "exchange_device_comm.h"

#include "comm.h"

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::edgeframe_glue;

void DeviceCommTransport::forward(const edgeframe::NodeRows &h)
{
  m_stage.forward(h, m_x.timer, [&] {
    EngineExec().fence("edgeframe::exchange gather");    // the stage complete before LAMMPS packs it
    m_x.comm->forward_comm(m_x.pair);
    m_x.timer.mark(&ExchangeSplit::comm);
  });
}

void DeviceCommTransport::reverse(const edgeframe::NodeRows &grad)
{
  m_stage.reverse(grad, m_x.timer, [&] {
    EngineExec().fence("edgeframe::exchange gather");
    m_x.comm->reverse_comm(m_x.pair);
    m_x.timer.mark(&ExchangeSplit::comm);
  });
}

int DeviceCommTransport::pack_forward_device(int n, const int *list, double *buf)
{
  m_stage.pack(buf, list, 0, n);
  return n * m_x.layout.words;
}

void DeviceCommTransport::unpack_forward_device(int n, int first, const double *buf)
{
  m_stage.unpack(buf, first, n);
}

int DeviceCommTransport::pack_reverse_device(int n, int first, double *buf)
{
  m_stage.pack(buf, nullptr, first, n);
  return n * m_x.layout.words;
}

void DeviceCommTransport::unpack_reverse_device(int n, const int *list, const double *buf)
{
  m_stage.add(buf, list, n);
}
